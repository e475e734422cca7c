/* btd_mpi.c -- weak scaling of the distributed block-tridiagonal solvers (sap_btd_create_dist)
 * over MPI processes, one device per process: the paper's weak-scaling problem (Lamas
 * Davina and Roman 2018, Table 3 / 5: gen:radiative, albedo 0.75, shift 0.75, bw = k, a
 * fixed number of block rows per process: k = 64 with 400, k = 256 with 100, k = 1024 with
 * 25, and k = 512 with 50 between them), one factorization + 16 single-column solves, for BCYCLIC (over the processes) and
 * Spike.  In one mpiexec run of P processes: first process 0 alone (its own communicator,
 * the 1-process baseline on the same machine), then all P; efficiency = time(1) / time(P).
 * Times are the maximum over the processes (seconds); comm = communication of process 0: MPI
 * and, for BCYCLIC, the copies staging the exchanged blocks through host memory, or with a
 * device-to-device transport (NCCL: $SAP_BTD_TRANSPORT auto|nccl) the device time of its
 * exchanges; the transport column is sap_btd_stats.transport.
 *
 * usage: mpiexec -n P btd_mpi [--backend auto|cpu|cuda] [--ks 64,256,1024] [--solves 16]
 *                             [--variant auto|getri|...] [--algos bcyclic,spike] [--scale S]
 *                             [--nb N] [--dist levels,interior,interior-dist] [--out DIR]
 * --dist: the orders of the distributed BCYCLIC measured, each its own row ($SAP_BTD_DIST set
 * before each creation; algo column "bcyclic" for levels, "bcyclic-interior" for interior first,
 * "bcyclic-interior-dist" for interior first with the reduced system distributed;
 * default: $SAP_BTD_DIST, else interior, the library's default).
 * Device: process r uses cuda device (local rank) mod (devices visible), the local rank
 * from OMPI_COMM_WORLD_LOCAL_RANK / MPI_LOCALRANKID / SLURM_LOCALID (else the rank).
 * --scale S divides the block rows per process by S; --nb N gives every k N block rows per process.
 * --repeat R (default 3): each object is factored and solved R times, the fastest kept.
 * --strong N: strong scaling instead, N unknowns in all (the paper's 307200), nb = N / k block
 * rows shared evenly; efficiency = time(1) / (P time(P)).  Writes <out>/btd_mpi_P<P>.csv and .md
 * (btd_mpi_strong_P<P>.* with --strong; process 0). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "sap.h"
#include "bench_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef BENCH_HAVE_MPI
#include <mpi.h>
#endif
#ifdef SAP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#ifndef BENCH_HAVE_MPI
int main(void)
{
    fprintf(stderr, "btd_mpi: this build has no MPI (SAP_ENABLE_MPI, libopenmpi-dev)\n");
    return 77;
}
#else

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int local_rank(int rank)
{
    const char *names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return atoi(v);
    }
    return rank;
}

typedef struct result {
    double factor, solve, comm, resid;
    int ok;
    char variant[24];
    char transport[48]; /* sap_btd_stats.transport */
} result;

static double max_of(MPI_Comm c, double v)
{
    double m = v;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, c);
    return m;
}

/* factor + solves of the matrix A (whole, on every process) over the processes of comm, the
 * fastest of repeat runs (factor + solves, each the maximum over the processes) */
static result run(sap_context *ctx, MPI_Comm comm, const sap_csr *A, sap_int k, sap_btd_algo algo, sap_btd_variant v,
                  int solves, const double *b, int repeat)
{
    result r = {0};
    sap_btd_options o;
    sap_btd_options_init(&o);
    o.algo = algo;
    o.variant = v;
    o.solves = solves;
    sap_btd *T = NULL;
    sap_status s = sap_btd_create_csr_dist(ctx, &comm, A, k, &o, &T);
    sap_int r0 = 0, nl = 0;
    double *x = NULL, *xg = NULL;
    if (s == SAP_OK) s = sap_btd_dist_range(T, &r0, &nl);
    if (s == SAP_OK && o.variant == SAP_BTD_VARIANT_AUTO) { /* calibrate apart: a first factorization */
        s = sap_btd_factor(T);
    }
    x = malloc(sizeof(double) * (size_t)(nl > 0 ? nl : 1));
    double best = INFINITY;
    for (int rep = 0; rep < repeat && s == SAP_OK; rep++) {
        MPI_Barrier(comm);
        double t0 = now();
        s = sap_btd_factor(T);
        double tf = max_of(comm, now() - t0);
        if (s != SAP_OK) break;
        sap_btd_stats st;
        sap_btd_get_stats(T, &st);
        double comm_f = st.time_comm;
        snprintf(r.variant, sizeof r.variant, "%s", sap_btd_variant_name(st.variant));
        snprintf(r.transport, sizeof r.transport, "%s", st.transport ? st.transport : "?");
        MPI_Barrier(comm);
        t0 = now();
        for (int i = 0; i < solves && s == SAP_OK; i++) s = sap_btd_solve(T, b + r0, x);
        double ts = max_of(comm, now() - t0);
        sap_btd_get_stats(T, &st);
        if (s == SAP_OK && tf + ts < best) {
            best = tf + ts;
            r.factor = tf;
            r.solve = ts;
            r.comm = comm_f + st.time_comm * solves; /* the last solve's share, times the solves */
        }
    }
    if (s == SAP_OK) {
        xg = malloc(sizeof(double) * (size_t)A->nrows);
        s = sap_btd_gather(T, x, xg);
        if (s == SAP_OK) {
            double *res = malloc(sizeof(double) * (size_t)A->nrows), nr = 0, nb = 0;
            memcpy(res, b, sizeof(double) * (size_t)A->nrows);
            sap_csr_spmv(A, -1.0, xg, 1.0, res);
            for (sap_int i = 0; i < A->nrows; i++) nr += res[i] * res[i], nb += b[i] * b[i];
            r.resid = sqrt(nr / nb);
            free(res);
        }
    }
    int ok = s == SAP_OK, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    r.ok = all;
    if (!ok) fprintf(stderr, "  btd_mpi %s: %s (%s)\n", sap_btd_algo_name(algo), sap_status_name(s),
                     sap_context_last_error(ctx));
    free(x);
    free(xg);
    sap_btd_destroy(T);
    return r;
}

int main(int argc, char **argv)
{
    static const int ks_all[] = {64, 256, 512, 1024}, rows_all[] = {400, 100, 50, 25};
    const char *backend = "auto", *out = "bench/results", *ks_arg = NULL, *vname = "auto", *algos = "bcyclic,spike";
    const char *dists = getenv("SAP_BTD_DIST") && *getenv("SAP_BTD_DIST") ? getenv("SAP_BTD_DIST") : "interior";
    int solves = 16;
    double scale = 1;
    int nb_fixed = 0, repeat = 3;
    long strong = 0; /* > 0: strong scaling, this many unknowns in all */
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) break;
        if (!strcmp(a, "--backend")) backend = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--ks")) ks_arg = v;
        else if (!strcmp(a, "--solves")) solves = atoi(v);
        else if (!strcmp(a, "--variant")) vname = v;
        else if (!strcmp(a, "--algos")) algos = v;
        else if (!strcmp(a, "--scale")) scale = atof(v);
        else if (!strcmp(a, "--nb")) nb_fixed = atoi(v);
        else if (!strcmp(a, "--dist")) dists = v;
        else if (!strcmp(a, "--repeat")) repeat = atoi(v);
        else if (!strcmp(a, "--strong")) strong = atol(v);
        else {
            if (rank == 0) fprintf(stderr, "btd_mpi: unknown option %s\n", a);
            MPI_Finalize();
            return 2;
        }
        i++;
    }
    sap_btd_variant variant;
    if (solves < 1 || scale < 1 || nb_fixed < 0 || repeat < 1 || strong < 0 ||
        sap_btd_variant_parse(vname, &variant) != SAP_OK) {
        if (rank == 0)
            fprintf(stderr, "btd_mpi: --solves >= 1, --scale >= 1, --nb >= 0, --repeat >= 1, --strong >= 0, --variant a "
                            "BCYCLIC variant\n");
        MPI_Finalize();
        return 2;
    }
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    if (sap_backend_parse(backend, &cfg.backend) != SAP_OK) return 2;
    int lr = local_rank(rank), ndev = 1;
#ifdef SAP_HAVE_CUDA
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) ndev = 1;
#endif
    cfg.device = lr % ndev;
    sap_context *ctx = NULL;
    if (sap_context_create(&ctx, &cfg) != SAP_OK) {
        fprintf(stderr, "btd_mpi: rank %d: no context for backend %s\n", rank, backend);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm solo;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &solo);
    FILE *csv = NULL, *md = NULL;
    char devs[4096] = "";
    {
        char mine[256], *all = rank == 0 ? malloc((size_t)256 * p) : NULL;
        snprintf(mine, sizeof mine, "%s", sap_context_device_name(ctx));
        MPI_Gather(mine, 256, MPI_CHAR, all, 256, MPI_CHAR, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            for (int q = 0; q < p; q++) {
                size_t l = strlen(devs);
                snprintf(devs + l, sizeof devs - l, "%s%d: %s", q ? "; " : "", q, all + (size_t)256 * q);
            }
            free(all);
        }
    }
    if (rank == 0) {
        char path[1024];
        snprintf(path, sizeof path, "%s/btd_mpi%s_P%d.csv", out, strong ? "_strong" : "", p);
        csv = fopen(path, "w");
        snprintf(path, sizeof path, "%s/btd_mpi%s_P%d.md", out, strong ? "_strong" : "", p);
        md = fopen(path, "w");
        if (!csv || !md) fprintf(stderr, "btd_mpi: cannot write under %s\n", out);
        if (csv) fprintf(csv, "backend,k,nb_per_process,processes,algo,variant,transport,factor,solves,solve_total,"
                              "total,comm,residual,efficiency\n");
        if (md) {
            char what[160];
            if (strong)
                snprintf(what, sizeof what, "%ld unknowns in all (nb = %ld / k block rows, an even share per process)",
                         strong, strong);
            else
                snprintf(what, sizeof what, "a fixed number of block rows per process%s",
                         scale > 1 ? " (divided by --scale)" : "");
            fprintf(md, "# bench/btd_mpi: %s scaling, factor + %d solves, 1 -> %d processes\n\nbackend %s; "
                        "processes (device each): %s.  Matrix: gen:radiative (albedo 0.75, shift 0.75, bw = k), %s.  "
                        "Times in seconds, maximum over the processes, the fastest of %d runs (factor + solves) of one "
                        "object; 1 = process 0 alone in the same run; efficiency = total(1) / total(P)%s; comm = "
                        "communication "
                        "of process 0 (MPI, and BCYCLIC's staging copies through host memory; with a device-to-device "
                        "transport, the device time of its exchanges); transport = sap_btd_stats.transport "
                        "($SAP_BTD_TRANSPORT = %s); bcyclic-interior = BCYCLIC interior first "
                        "($SAP_BTD_DIST=interior: the reduced system of the interface rows replicated on every "
                        "process where the exchanges go device to device), bcyclic-interior-dist = interior first "
                        "with that reduced system distributed ($SAP_BTD_DIST=interior-dist), bcyclic = the levels "
                        "order.\n\n",
                    strong ? "strong" : "weak", solves, p, sap_backend_name(sap_context_backend(ctx)), devs, what,
                    repeat, strong ? " / P (speedup / P)" : "",
                    getenv("SAP_BTD_TRANSPORT") ? getenv("SAP_BTD_TRANSPORT") : "unset: auto");
            fprintf(md, "| k | nb/process | P | algo | variant | transport | factor | %d solves | total | comm | "
                        "residual | efficiency |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n", solves);
        }
        printf("%-5s %-6s %-3s %-21s %-14s %-20s %9s %9s %9s %9s %9s %6s\n", "k", "nb/p", "P", "algo", "variant",
               "transport", "factor", "solves", "total", "comm", "residual", "eff");
    }
    for (size_t ci = 0; ci < sizeof ks_all / sizeof *ks_all; ci++) {
        int k = ks_all[ci];
        char key[16];
        snprintf(key, sizeof key, "%d", k);
        if (!bench_in_list(ks_arg, key)) continue;
        int nbp = nb_fixed > 0 ? nb_fixed : (int)(rows_all[ci] / scale + 0.5);
        if (nbp < 2) nbp = 2;
        const int nbs = strong ? (int)(strong / k) : 0; /* strong: block rows in all */
        if (strong && nbs < 2 * p) continue;
        for (int ai = SAP_BTD_BCYCLIC; ai <= SAP_BTD_REDUCED_SPIKE; ai++)
          for (int di = 0; di < 3; di++) {
            static const char *dname[] = {"levels", "interior", "interior-dist"};
            static const char *aname[] = {"bcyclic", "bcyclic-interior", "bcyclic-interior-dist"};
            const char *an = sap_btd_algo_name((sap_btd_algo)ai);
            if (!bench_in_list(algos, an)) continue;
            if (ai == SAP_BTD_BCYCLIC) {
                if (!bench_in_list(dists, dname[di])) continue;
                setenv("SAP_BTD_DIST", dname[di], 1);
                an = aname[di];
            } else if (di > 0) {
                continue;
            }
            result r[2];
            for (int pass = 0; pass < 2; pass++) {
                int np = pass == 0 ? 1 : p;
                r[pass].ok = 0;
                if (pass == 0 && rank != 0) continue;
                MPI_Comm c = pass == 0 ? solo : MPI_COMM_WORLD;
                sap_int n = strong ? (sap_int)k * nbs : (sap_int)k * nbp * np;
                sap_csr *A = NULL;
                if (sap_gen_radiative(ctx, n, 0.75, 1000.0, k, 0.75, &A) != SAP_OK) {
                    fprintf(stderr, "btd_mpi: generator failed: %s\n", sap_context_last_error(ctx));
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                double *xs = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
                sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, xs);
                sap_csr_spmv(A, 1.0, xs, 0.0, b);
                r[pass] = run(ctx, c, A, k, (sap_btd_algo)ai, variant, solves, b, repeat);
                free(xs), free(b);
                sap_csr_destroy(A);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank != 0) continue;
            for (int pass = 0; pass < 2; pass++) {
                int np = pass == 0 ? 1 : p;
                result *q = &r[pass];
                if (strong) nbp = (nbs + np - 1) / np; /* the largest share */
                if (!q->ok) {
                    printf("%-5d %-6d %-3d %-21s failed\n", k, nbp, np, an);
                    if (md) fprintf(md, "| %d | %d | %d | %s | - | | | | failed | | | |\n", k, nbp, np, an);
                    continue;
                }
                double tot = q->factor + q->solve, t1 = r[0].factor + r[0].solve;
                double eff = r[0].ok && tot > 0 ? t1 / tot / (strong ? np : 1) : NAN;
                printf("%-5d %-6d %-3d %-21s %-14s %-20s %9.4f %9.4f %9.4f %9.4f %9.1e %5.0f%%\n", k, nbp, np, an,
                       q->variant, q->transport, q->factor, q->solve, tot, q->comm, q->resid, 100 * eff);
                if (csv) fprintf(csv, "%s,%d,%d,%d,%s,%s,%s,%.6f,%d,%.6f,%.6f,%.6f,%.3e,%.4f\n",
                                 sap_backend_name(sap_context_backend(ctx)), k, nbp, np, an, q->variant, q->transport,
                                 q->factor, solves, q->solve, tot, q->comm, q->resid, eff);
                if (md) fprintf(md, "| %d | %d | %d | %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %.1e | %.0f%% |\n", k,
                                nbp, np, an, q->variant, q->transport, q->factor, q->solve, tot, q->comm, q->resid,
                                100 * eff);
            }
            if (csv) fflush(csv);
            if (md) fflush(md);
        }
    }
    if (csv) fclose(csv);
    if (md) fclose(md);
    if (solo != MPI_COMM_NULL) MPI_Comm_free(&solo);
    sap_context_destroy(ctx);
    MPI_Finalize();
    return 0;
}
#endif
