#!/usr/bin/env python3
"""Per-call overhead of the Python layer of sap (sap.Solver.solve) against the C API
(sap_solver_solve called in a loop from C inside the extension), in the same process on
the same solver: a solve with reuse (setup done once), x starting from 0 each call.

    python3 bench/python_overhead.py [--backend cpu|cuda] [--sizes 1000,100000] [--reps 200]

Prints a table and writes bench/results/python_overhead_<backend>.csv and .md.  With
--backend cuda and CuPy installed it also times the device path: sap.Solver over a CuPy
CSR matrix and CuPy right-hand sides (sap_solver_create_device / _solve_device: A, b and
x stay on the GPU) against sap_solver_solve_device called in a loop from C, both starting
from the solution (x0 = x*: the same library work on both sides, so the difference is the
Python layer: argument checks, the CuPy x allocation and copy of x0, the stream sync).
The row also gives the host->device bytes per solve (0: nothing went up), the bytes of
A that ever went up (a_h2d_bytes, 0 when the Krylov matrix was built from the caller's
arrays) and the transfer entries of A's way down, from Solver.stats: download_bytes (0 when
no host copy of A was made: Krylov + Jacobi, given or chosen by the automatic plan for a
diagonally dominant matrix, builds everything from the device CSR), download_reason (why
one was made) and stats_d2h_bytes (the device statistics' few scalars).

    python3 bench/python_overhead.py --backend cuda --specs poisson3d:n=30,poisson3d:n=60 --name poisson

runs other matrices (sap.gen specs) and writes python_overhead_<backend>_<name>.*.

The overhead is  t_python - t_C  per call, each side's best of --rounds rounds of --reps
calls (the least disturbed measure on a shared host, as Python's timeit advises; the
difference of the two sides' medians is given beside it, overhead_median_us);
the target is < 50 microseconds.  Run on the GPU machine with the package installed
(scripts/python.sh) as:
    build/venv/bin/python bench/python_overhead.py --backend cuda
"""
import argparse
import csv
import os
import platform
import statistics
import sys
import time

import numpy as np

import sap


def timing(t_c, t_py):
    """the per-call times of both sides: best of the rounds, and the medians' difference"""
    r = dict(c_us=min(t_c) * 1e6, py_us=min(t_py) * 1e6)
    r["overhead_us"] = r["py_us"] - r["c_us"]
    r["overhead_median_us"] = (statistics.median(t_py) - statistics.median(t_c)) * 1e6
    return r


def bench_case(spec, backend, reps, rounds, method):
    A = sap.gen(spec)
    n = A.shape[0]
    b = np.ones(n)
    opts = dict(backend=backend, host_small=False) if backend != "cpu" else dict(backend="cpu")
    if method:
        opts["method"] = method
    S = sap.Solver(A, **opts).setup()
    S.solve(b)  # warm-up (first-solve allocations)
    x = np.zeros(n)
    S._core._bench_solve(b, x, 3)
    t_c, t_py = [], []
    for _ in range(rounds):
        st, sec = S._core._bench_solve(b, x, reps)
        t_c.append(sec / reps)
        t0 = time.perf_counter()
        for _ in range(reps):
            S.solve(b)
        t_py.append((time.perf_counter() - t0) / reps)
    st = S.stats
    res = dict(spec=spec, n=n, backend=st["backend"], method=st["method"], on_host=st["on_host"],
               **timing(t_c, t_py))
    res["relres"] = st["relative_residual"]
    S._core.reset_transfers()
    S.solve(b)
    tr = S.stats["transfers"]
    res["h2d_bytes_per_solve"] = tr["h2d_bytes"]
    res["d2h_bytes_per_solve"] = tr["d2h_bytes"]
    res["input"] = "numpy"
    res["a_h2d_bytes"] = ""
    res["host_solves"] = ""
    res["download_bytes"] = ""
    res["download_reason"] = ""
    res["stats_d2h_bytes"] = ""
    rows = [res]
    # the same from the solution (x0 = x*): the library work per call is then the residual
    # check alone, so the run-to-run spread of full solves no longer hides the Python layer
    xs = S.solve(b)
    t_c, t_py = [], []
    for _ in range(rounds):
        _, sec = S._core._bench_solve(b, x, reps, xs)
        t_c.append(sec / reps)
        t0 = time.perf_counter()
        for _ in range(reps):
            S.solve(b, x0=xs)
        t_py.append((time.perf_counter() - t0) / reps)
    r1 = dict(res, input="numpy (x0=x*)", **timing(t_c, t_py))
    rows.append(r1)
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None and backend != "cpu":
        import cupyx.scipy.sparse as csp
        import scipy.sparse as sp
        Ad = csp.csr_matrix(sp.csr_matrix(A))
        bd = cupy.asarray(b)
        D = sap.Solver(Ad, **opts).setup()
        xs = D.solve(bd)  # warm-up; x* for both sides
        xd = xs.copy()
        D._core._bench_solve_device(bd.data.ptr, xd.data.ptr, 3)
        t_c, t_cp = [], []
        for _ in range(rounds):
            st, sec = D._core._bench_solve_device(bd.data.ptr, xd.data.ptr, reps)
            t_c.append(sec / reps)
            cupy.cuda.runtime.deviceSynchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                D.solve(bd, x0=xs)
            cupy.cuda.runtime.deviceSynchronize()
            t_cp.append((time.perf_counter() - t0) / reps)
        D._core.reset_transfers()
        D.solve(bd)
        st = D.stats
        tr, dv = st["transfers"], st["device_arrays"]
        r2 = dict(res, input="cupy (device arrays, x0=x*)", method=st["method"], on_host=st["on_host"],
                  **timing(t_c, t_cp),
                  relres=st["relative_residual"], h2d_bytes_per_solve=tr["h2d_bytes"],
                  d2h_bytes_per_solve=tr["d2h_bytes"])
        r2["a_h2d_bytes"] = dv["a_h2d_bytes"]
        r2["host_solves"] = dv["host_solves"]
        r2["download_bytes"] = dv["download_bytes"]
        r2["download_reason"] = dv["download_reason"] or "none"
        r2["stats_d2h_bytes"] = dv["stats_d2h_bytes"]
        rows.append(r2)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--sizes", default="1000,100000")
    ap.add_argument("--K", type=int, default=10)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--method", default="", help="force a method (default: the automatic choice)")
    ap.add_argument("--specs", default="", help="comma-separated sap.gen specs instead of banded:N=<size>,K=<K>,d=1 "
                    "(';' also separates, for specs with commas)")
    ap.add_argument("--name", default="", help="suffix of the output files")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    a = ap.parse_args()
    rows = []
    if a.specs:
        sep = ";" if ";" in a.specs else ","
        specs = [s for s in a.specs.split(sep) if s]
    else:
        specs = [f"banded:N={int(s)},K={a.K},d=1" for s in a.sizes.split(",") if s]
    for spec in specs:
        rows += bench_case(spec, a.backend, a.reps, a.rounds, a.method)
    cols = ["spec", "n", "input", "backend", "method", "on_host", "c_us", "py_us", "overhead_us", "overhead_median_us",
            "relres",
            "h2d_bytes_per_solve", "d2h_bytes_per_solve", "a_h2d_bytes", "host_solves", "download_bytes",
            "stats_d2h_bytes", "download_reason"]
    head = f"sap {sap.__version__} python overhead, {platform.node()}, {platform.processor() or platform.machine()}"
    print(head)
    print(f"{'matrix':28} {'input':28} {'method':11} {'C API us':>10} {'Python us':>10} {'overhead us':>12} "
          f"{'h2d B':>10} {'A up B':>8} {'A down B':>10} {'stats d2h B':>11}  why A came down")
    for r in rows:
        print(f"{r['spec']:28} {r['input']:28} {r['method']:11} {r['c_us']:10.1f} {r['py_us']:10.1f} "
              f"{r['overhead_us']:12.1f} {r['h2d_bytes_per_solve']:10d} {str(r['a_h2d_bytes']):>8} "
              f"{str(r['download_bytes']):>10} {str(r['stats_d2h_bytes']):>11}  {r['download_reason']}")
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, f"python_overhead_{a.backend}" + (f"_{a.name}" if a.name else ""))
    with open(base + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in cols})
    with open(base + ".md", "w") as f:
        f.write(f"# Python layer overhead per solve ({a.backend})\n\n{head}; "
                f"`{' '.join(sys.argv)}`\n\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for r in rows:
            f.write("| " + " | ".join(f"{r[k]:.3g}" if isinstance(r[k], float) else str(r[k]) for k in cols) + " |\n")
        worst = max(r["overhead_us"] for r in rows if r["input"] == "numpy")
        f.write(f"\nLargest overhead with NumPy inputs: {worst:.1f} us per call (target < 50 us)")
        f.write(" (x from 0: a whole solve on each side, so the solves' run-to-run spread is in it)")
        warm = [r["overhead_us"] for r in rows if r["input"] == "numpy (x0=x*)"]
        if warm:
            f.write(f"; from x0 = x*: {max(warm):.1f} us")
        f.write(".\n")
        dev = [r for r in rows if r["input"].startswith("cupy")]
        if dev:
            f.write(f"Largest overhead with CuPy device arrays: {max(r['overhead_us'] for r in dev):.1f} us per call "
                    f"(target < 50 us); bytes of A sent host->device: "
                    f"{', '.join(str(r['a_h2d_bytes']) for r in dev)}; bytes of A downloaded: "
                    f"{', '.join(str(r['download_bytes']) for r in dev)} "
                    f"({'; '.join(r['download_reason'] for r in dev)}); host solves: "
                    f"{', '.join(str(r['host_solves']) for r in dev)}.\n")
    print(f"wrote {base}.csv and {base}.md")


if __name__ == "__main__":
    main()
