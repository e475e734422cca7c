#!/usr/bin/env python3
"""btd_model.py -- a communication model of the distributed BCYCLIC (interior first, the
library's default), fitted to bench/btd_mpi's weak- and strong-scaling measurements on 1 and 2
GPUs, predicting 4 to 128 GPUs (issue 17).

Model, per block width k (times in seconds, factor + S single-column solves):
  one process, nb block rows:   t1(nb)  = c nb + d log2(nb)          (c: a row's elimination and its
                                share of the solves; d: a level's fixed cost: launches, syncs)
                                fitted per k on the 1-process rows of the weak and strong runs
  P processes, m rows each:     tP      = t1(m) + reduced(P) + comm(P)
  the reduced system of the 2P - 2 interface rows (with the elimination step more that the
  pinned interface row costs):
    replicated (P <= 9, the default with a device-to-device transport): every process factors
      and solves all of it:     reduced = o t1(2P - 2) / t1(2)
      comm = all-gather of the interface rows, once in the factorization (3 k^2 doubles a row)
      and once per solve (k doubles a row); the first and last process receive 2P - 3 rows:
                                comm    = (1 + S) alpha + beta 8 (2P - 3) (3 k^2 + S k)
    distributed (P > 9): L = ceil(log2(2P - 2)) levels of the cyclic reduction over processes,
      each one exchange of a k x 2k block in the factorization and two of k doubles per solve,
      each level costing what the 2-row reduced system does:
                                reduced = o L
                                comm    = L (1 + 2 S) alpha + beta 8 L (2 k^2 + 2 S k)
  alpha (latency of one exchange) and beta (seconds per byte received) are fitted by least
  squares to the measured communication time of process 0 in the 2-process rows (comm column:
  the device time of the NCCL exchanges); o, per k, is what the 2-process rows cost beyond
  t1(m) and comm(2) (the mean over the weak and strong rows), so that the model reproduces
  P = 2 up to the fit of the exchanges.
The model assumes the 2-GPU link (NVLink through NVSwitch) between every pair of GPUs: past one
host (8 GPUs) it is optimistic by the ratio of the inter-node to the NVLink rate.

usage: python3 bench/btd_model.py --weak W.csv --strong S.csv [--out DIR] [--name btd_model] [--note TEXT]
W.csv / S.csv: btd_mpi_P2.csv and btd_mpi_strong_P2.csv of one run (rows bcyclic-interior).
Writes DIR/NAME.md and DIR/NAME.csv (the predictions)."""
import argparse
import csv
import math
import os
import sys

ALGO = "bcyclic-interior"
PS = [1, 2, 4, 8, 16, 32, 64, 128]


def rows(path):
    with open(path) as f:
        return [r for r in csv.DictReader(f) if r["algo"] == ALGO]


def lstsq2(xs, ys, zs):
    """z ~ a x + b y, least squares (2 x 2 normal equations); None when singular."""
    sxx = sum(x * x for x in xs)
    syy = sum(y * y for y in ys)
    sxy = sum(x * y for x, y in zip(xs, ys))
    sxz = sum(x * z for x, z in zip(xs, zs))
    syz = sum(y * z for y, z in zip(ys, zs))
    det = sxx * syy - sxy * sxy
    if abs(det) < 1e-300:
        return None
    return (sxz * syy - syz * sxy) / det, (syz * sxx - sxz * sxy) / det


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weak", required=True)
    ap.add_argument("--strong", required=True)
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--name", default="btd_model")
    ap.add_argument("--note", default="", help="a line on where the measurements come from")
    a = ap.parse_args()
    weak, strong = rows(a.weak), rows(a.strong)
    if not weak or not strong:
        sys.exit("btd_model.py: no %s rows in %s / %s" % (ALGO, a.weak, a.strong))
    S = int(weak[0]["solves"])
    # one process: t1(nb) = c nb + d log2(nb), per k (all 1-process rows of both runs)
    one = {}
    for r in weak + strong:
        if int(r["processes"]) == 1:
            one.setdefault(int(r["k"]), []).append((int(r["nb_per_process"]), float(r["total"])))
    fit1 = {}
    for k, pts in one.items():
        pts = sorted(set(pts))
        f = lstsq2([p[0] for p in pts], [math.log2(max(p[0], 2)) for p in pts], [p[1] for p in pts])
        if f is None or len({p[0] for p in pts}) < 2 or f[0] <= 0 or f[1] < 0:
            nb, t = pts[-1]
            f = (t / nb, 0.0)  # one size (or a fit out of range): all per row
        fit1[k] = f

    def t1(k, nb):
        c, d = fit1[k]
        return c * nb + d * math.log2(max(nb, 2))

    # communication: the 2-process rows, replicated reduced system (P = 2: 2 interface rows, each
    # process receives the other's one row)
    xs, ys, zs, two = [], [], [], []
    for src, r in [("weak", r) for r in weak] + [("strong", r) for r in strong]:
        if int(r["processes"]) != 2 or int(r["k"]) not in fit1:
            continue
        k = int(r["k"])
        xs.append(1 + S)
        ys.append(8.0 * (3 * k * k + S * k))
        zs.append(float(r["comm"]))
        two.append((src, r))
    ab = lstsq2(xs, ys, zs)
    if ab is None:
        sys.exit("btd_model.py: too few 2-process rows to fit the exchanges")
    alpha, beta = max(ab[0], 0.0), max(ab[1], 0.0)

    def comm_of(k, P):
        r = 2 * P - 2
        if P <= 9:  # the most any process receives: 2P - 3 rows
            return (1 + S) * alpha + beta * 8.0 * (r - 1) * (3 * k * k + S * k)
        L = math.ceil(math.log2(r))
        return L * (1 + 2 * S) * alpha + beta * 8.0 * L * (2 * k * k + 2 * S * k)

    # o per k: the 2-process rows beyond t1(m) and comm(2)
    extra = {}
    for src, r in two:
        k = int(r["k"])
        extra.setdefault(k, []).append(float(r["total"]) - t1(k, int(r["nb_per_process"])) - comm_of(k, 2))
    over = {k: max(sum(v) / len(v), 0.0) for k, v in extra.items()}

    def model(k, m, P):
        if P == 1:
            return t1(k, m), 0.0
        o = over.get(k, 0.0)
        if P <= 9:
            red = o * t1(k, 2 * P - 2) / t1(k, 2)
        else:
            red = o * math.ceil(math.log2(2 * P - 2))
        cm = comm_of(k, P)
        return t1(k, m) + red + cm, cm

    os.makedirs(a.out, exist_ok=True)
    md = open(os.path.join(a.out, a.name + ".md"), "w")
    cf = open(os.path.join(a.out, a.name + ".csv"), "w")
    cf.write("scaling,k,processes,rows_per_process,predicted_total,predicted_comm,efficiency_or_speedup,measured_total\n")
    md.write("# Communication model of the distributed BCYCLIC (interior first), 1 -> 128 GPUs\n\n")
    md.write("Fitted by `bench/btd_model.py --weak %s --strong %s` to the `%s` rows (factor + %d solves); "
             "the model is in the script's docstring.%s\n\n" % (os.path.basename(a.weak), os.path.basename(a.strong), ALGO, S,
                                                                 (" " + a.note) if a.note else ""))
    md.write("Fitted: alpha = %.1f us per exchange, 1 / beta = %.1f GB/s received; one process, "
             "t1(nb) = c nb + d log2(nb); o = the 2-row reduced system and the extra step:\n\n"
             "| k | c (ms a row) | d (ms a level) | o (ms) |\n|---|---|---|---|\n"
             % (alpha * 1e6, (1.0 / beta / 1e9) if beta > 0 else float("inf")))
    for k in sorted(fit1):
        md.write("| %d | %.4f | %.4f | %.3f |\n" % (k, fit1[k][0] * 1e3, fit1[k][1] * 1e3, over.get(k, 0.0) * 1e3))
    md.write("\nThe model on the measured 2-GPU rows (and the 1-process rows it was fitted to):\n\n"
             "| run | k | rows/process | P | measured | model | model / measured |\n|---|---|---|---|---|---|---|\n")
    for r in weak + strong:
        k, P, m = int(r["k"]), int(r["processes"]), int(r["nb_per_process"])
        if k not in fit1:
            continue
        src = "weak" if r in weak else "strong"
        t = float(r["total"])
        pm, _ = model(k, m, P)
        md.write("| %s | %d | %d | %d | %.4f | %.4f | %.2f |\n" % (src, k, m, P, t, pm, pm / t))
        cf.write("%s,%d,%d,%d,%.6f,,,%.6f\n" % (src + "-measured", k, P, m, pm, t))
    # predictions
    def predict(kind, title, label, sizes, rows_at, cell):
        """one table: per k, the model at every P (rows_at(nb, P): rows per process)"""
        md.write("\n## %s\n\n| k | %s |" % (title, label) + "".join(" P = %d |" % P for P in PS) + "\n|---|---|"
                 + "---|" * len(PS) + "\n")
        for k in sorted(sizes):
            if k not in fit1:
                continue
            nb = sizes[k]
            base = model(k, nb, 1)[0]
            cells = []
            for P in PS:
                m = rows_at(nb, P)
                if m < 2:
                    cells.append("-")
                    continue
                t, cm = model(k, m, P)
                cells.append(cell(t, base / t))
                cf.write("%s,%d,%d,%d,%.6f,%.6f,%.4f,\n" % (kind, k, P, m, t, cm, base / t))
            md.write("| %d | %d | %s |\n" % (k, nb, " | ".join(cells)))

    predict("weak", "Weak scaling predicted (rows per process fixed; efficiency = t(1) / t(P))", "rows/process",
            {int(r["k"]): int(r["nb_per_process"]) for r in weak if int(r["processes"]) == 1},
            lambda nb, P: nb, lambda t, e: "%.4f s (%.0f%%)" % (t, 100 * e))
    predict("strong", "Strong scaling predicted (all rows fixed; speedup = t(1) / t(P))", "rows in all",
            {int(r["k"]): int(r["nb_per_process"]) for r in strong if int(r["processes"]) == 1},
            lambda nb, P: math.ceil(nb / P), lambda t, e: "%.4f s (%.1fx)" % (t, e))
    md.write("\nPast 9 processes the reduced system is distributed (log2(2P - 2) levels of exchanges); past one "
             "host the link is slower than the NVLink rate fitted here, so the figures there are an upper bound.\n")
    md.close()
    cf.close()
    print(open(os.path.join(a.out, a.name + ".md")).read())


if __name__ == "__main__":
    main()
