#!/usr/bin/env python3
"""Reference timings for bench/io.c: fast_matrix_market (the C++ reader behind
scipy.io.mmread since SciPy 1.12) parsing the same decompressed texts from memory into
(data, (i, j)) triplets with symmetry generalized, with 1 thread and with all threads.
Writes CSV: matrix,text_mb,fmm1_s,fmm_s.  Used by bench/run_io.sh when the module is
installed (pip install fast_matrix_market).

    io_fmm.py MATRIX_DIR OUT.csv [--min-time S]
"""
import gzip
import io
import sys
import time

import fast_matrix_market as fmm


def timed(fn, min_time):
    fn()  # warm-up
    reps, t0 = 0, time.perf_counter()
    while True:
        fn()
        reps += 1
        el = time.perf_counter() - t0
        if el >= min_time:
            return el / reps


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mdir, out = sys.argv[1], sys.argv[2]
    min_time = float(sys.argv[sys.argv.index("--min-time") + 1]) if "--min-time" in sys.argv else 0.2
    rows = []
    with open(f"{mdir}/MANIFEST.tsv") as mf:
        next(mf)
        for line in mf:
            name, file = line.split("\t")[:2]
            raw = open(f"{mdir}/{file}", "rb").read()
            text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
            t1 = timed(lambda: fmm.read_coo(io.BytesIO(text), parallelism=1), min_time)
            tn = timed(lambda: fmm.read_coo(io.BytesIO(text), parallelism=0), min_time)
            mb = len(text) / 1e6
            rows.append((name, mb, t1, tn))
            print(f"{name:22s} {mb:8.2f} MB  fmm 1 thread {mb / t1:6.0f} MB/s  all threads {mb / tn:6.0f} MB/s",
                  flush=True)
    with open(out, "w") as f:
        f.write("matrix,text_mb,fmm1_s,fmm_s\n")
        for r in rows:
            f.write("%s,%.4f,%.6g,%.6g\n" % r)


if __name__ == "__main__":
    main()
