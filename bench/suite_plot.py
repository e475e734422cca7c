#!/usr/bin/env python3
"""suite_plot.py -- box plot of sap's log2 speedups against each anchor (like Figure 12 of
003_899a8dfc78ed100b.txt) from bench/suite's suite.csv:

    S = log2(T_anchor / T_sap) over the systems both solve (status ok), one box per anchor.

usage: python3 bench/suite_plot.py [suite.csv] [suite_speedup.png]
(defaults: bench/results/suite.csv, the PNG next to it).  Needs matplotlib.
"""
import csv
import math
import os
import sys

ANCHORS = ["superlu", "umfpack", "mumps", "pardiso", "cudss", "cusolver_qr", "cusparse_ilu0"]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/suite.csv"
    png = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(path) or ".", "suite_speedup.png")
    times = {}  # (name, solver) -> seconds, successful solves only (later rows win)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["name"], row["solver"])
            t = row.get("time_s") or ""
            if row["status"] == "ok" and t and float(t) > 0:
                times[key] = float(t)
            else:
                times.pop(key, None)
    names = sorted({n for (n, _) in times})
    data, labels = [], []
    for a in ANCHORS:
        s = [math.log2(times[(n, a)] / times[(n, "sap")]) for n in names if (n, "sap") in times and (n, a) in times]
        if s:
            data.append(s)
            labels.append(f"{a}\n(n={len(s)})")
    if not data:
        print("suite_plot.py: no system solved by sap and an anchor; no plot")
        return 0
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.4 * len(data) + 2.5, 4.5))
    ax.boxplot(data, whis=1.5, flierprops=dict(marker="+", markeredgecolor="red"))
    ax.set_xticks(range(1, len(labels) + 1))
    ax.set_xticklabels(labels)
    ax.axhline(0.0, color="gray", linewidth=0.8, linestyle="--")
    ax.set_ylabel("log2(T_anchor / T_sap)   (> 0: sap faster)")
    ax.set_title("sap speedup over each anchor (systems both solve)")
    fig.tight_layout()
    fig.savefig(png, dpi=130)
    print(f"suite_plot.py: wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
