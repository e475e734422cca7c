#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] [HARNESS...] -- builds the libFuzzer harnesses (clang, build-fuzz,
# CPU-only, OpenMP off, ASan + UBSan + LeakSanitizer) and runs each for SECONDS (default
# 45) from a copy of its seed corpus fuzz/corpus/NAME/ (so runs add nothing to the
# repository; *.hex seeds are turned into bytes), with -max_len and -timeout set.  Fails
# (exit 1) when any harness finds a crash, leak, timeout or out-of-memory; the reproducer
# and the log are kept under $SAP_FUZZ_OUT (default build-fuzz/findings/NAME/).
#
# Environment: SAP_FUZZ_BUILD (build dir, default build-fuzz), SAP_FUZZ_JOBS (parallel
# workers per harness, default 1), SAP_FUZZ_ARGS (extra libFuzzer flags),
# SAP_FUZZ_KEEP_CORPUS=DIR (keep each grown corpus under DIR/NAME), CC/CXX (default
# clang-14 / clang++-14, else clang / clang++).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-45}
shift || true
build=${SAP_FUZZ_BUILD:-build-fuzz}
jobs=${SAP_FUZZ_JOBS:-1}

if [ -z "${CC:-}" ]; then
    if command -v clang-14 >/dev/null; then CC=clang-14 CXX=clang++-14; else CC=clang CXX=clang++; fi
fi
export CC CXX
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSAP_ENABLE_CUDA=OFF -DSAP_ENABLE_OPENMP=OFF \
      -DSAP_BUILD_TESTS=OFF -DSAP_BUILD_BENCH=OFF -DSAP_BUILD_FUZZ=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target sap_fuzz

harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
    for f in fuzz/fuzz_*.c; do harnesses+=("$(basename "$f" .c)"); done
fi

# per harness: the longest input worth trying (Matrix Market text needs room; a solve
# input is 8 header bytes, options and at most 512 entries)
max_len() {
    case "$1" in
    fuzz_mm | fuzz_mm_gz) echo 4096 ;;
    fuzz_solve) echo 4096 ;;
    *) echo 512 ;;
    esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sap_fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp" # the harnesses' temporary files go there too
out=${SAP_FUZZ_OUT:-$build/findings}
mkdir -p "$out"
out=$(cd "$out" && pwd)
failed=()
for h in "${harnesses[@]}"; do
    bin="$build/fuzz/$h"
    [ -x "$bin" ] || { echo "fuzz/run.sh: no harness $bin" >&2; exit 2; }
    corpus="$tmp/corpus_$h"
    mkdir -p "$corpus" "$out/$h"
    for f in fuzz/corpus/"$h"/*; do
        [ -f "$f" ] || continue
        case "$f" in
        *.hex) python3 -c 'import sys; open(sys.argv[2], "wb").write(bytes.fromhex(open(sys.argv[1]).read()))' \
                   "$f" "$corpus/$(basename "$f" .hex)" ;;
        *) cp "$f" "$corpus/" ;;
        esac
    done
    # the crash inputs of earlier findings stay in the corpus (fuzz/regress/NAME/)
    for f in fuzz/regress/"$h"/*; do [ -f "$f" ] && cp "$f" "$corpus/regress_$(basename "$f")"; done
    echo "== fuzz/run.sh: $h for ${secs}s (jobs $jobs, corpus $(ls "$corpus" | wc -l) files)"
    log="$out/$h/fuzz.log"
    args=(-max_total_time="$secs" -max_len="$(max_len "$h")" -timeout=10 -rss_limit_mb=2048
          -artifact_prefix="$out/$h/" -print_final_stats=1 ${SAP_FUZZ_ARGS:-})
    set +e
    if [ "$jobs" -gt 1 ]; then
        # workers share the corpus directory; each writes fuzz-N.log in the current directory
        (cd "$out/$h" && rm -f fuzz-*.log &&
         "$OLDPWD/$bin" "${args[@]}" -jobs="$jobs" -workers="$jobs" "$corpus" >"$log" 2>&1)
        rc=$?
        cat "$out/$h"/fuzz-*.log >>"$log" 2>/dev/null
    else
        "$bin" "${args[@]}" "$corpus" >"$log" 2>&1
        rc=$?
    fi
    set -e
    grep -E "^(stat::|#[0-9]+ +DONE)" "$log" | tail -n 8 || true
    if [ -n "${SAP_FUZZ_KEEP_CORPUS:-}" ]; then
        mkdir -p "$SAP_FUZZ_KEEP_CORPUS/$h"
        cp "$corpus"/* "$SAP_FUZZ_KEEP_CORPUS/$h/" 2>/dev/null || true
    fi
    if [ $rc -ne 0 ] || grep -qE "^==[0-9]+==ERROR|^SUMMARY: |runtime error:|fuzz invariant failed" "$log"; then
        echo "fuzz/run.sh: $h FAILED (rc $rc), log $log:" >&2
        grep -E "ERROR|SUMMARY|runtime error|invariant|Test unit written" "$log" | head -n 20 >&2 || true
        failed+=("$h")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz/run.sh: findings in: ${failed[*]} (reproducers under $out)" >&2
    exit 1
fi
echo "fuzz/run.sh: no findings in ${harnesses[*]} (${secs}s each)"
