/* btd.c -- the block-tridiagonal solvers (sap_btd_*) on the paper's problem sizes (Lamas
 * Davina and Roman 2018, Table 3: block sizes k = 64 .. 1024 with the block rows one process
 * holds in the weak-scaling runs, 51200 k=64 ... 3200 k=1024 over 128 processes), the
 * radiative-transfer shift-and-invert matrix (gen:radiative, albedo 0.75, shift 0.75, band
 * bw = k inside the blocks): one factorization + 16 solves of one right-hand side (what the
 * Krylov-Schur of the paper does per restart), for BCYCLIC with the automatic variant and
 * each of the four, and Spike (P = 4).  Anchors in the same run: the dense LU of the same
 * matrix (cuSOLVER getrf/getrs on a cuda context, LAPACK dgetrf/dgetrs on the host) where it
 * fits the limits, and sap's banded solver (DIRECT: one banded LU, P = 1, double) of the
 * matrix seen as a band of half-width 2k - 1.
 *
 * usage: btd [--backend auto|cpu|cuda] [--ks 64,96,...] [--scale S] [--solves 16]
 *            [--dense-max-gflop G] [--band-max-gflop G] [--out DIR]
 * --scale S divides the block-row counts by S (quick runs on small machines).  Writes
 * <out>/btd.csv and <out>/btd.md; times in seconds (factor: sap_btd_factor after the upload
 * of the blocks, calibration excluded and shown apart; solves: host vector in, host vector
 * out, as an Arnoldi step sees them). */
#include "sap.h"
#include "bench_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SAP_HAVE_CUDA
#include "device/cuda/cuda_internal.h"
#include <cuda_runtime.h>
#include <cusolverDn.h>
#endif

#ifdef SAP_HAVE_OPENBLAS
extern void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
extern void dgetrs_(const char *t, const int *n, const int *nrhs, const double *a, const int *lda, const int *ipiv,
                    double *b, const int *ldb, int *info, size_t tl);
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double rel_res(const sap_csr *A, const double *x, const double *b)
{
    double *r = malloc(sizeof(double) * (size_t)A->nrows), nr = 0, nb = 0;
    memcpy(r, b, sizeof(double) * (size_t)A->nrows);
    sap_csr_spmv(A, -1.0, x, 1.0, r);
    for (sap_int i = 0; i < A->nrows; i++) nr += r[i] * r[i], nb += b[i] * b[i];
    free(r);
    return sqrt(nr / nb);
}

typedef struct result {
    double calib, factor, solve, resid;
    int ok;
    char variant[24];
} result;

static result run_btd(sap_context *ctx, const sap_csr *A, sap_int k, sap_btd_algo algo, sap_btd_variant v,
                      int solves, const double *b, double *x)
{
    result r = {0};
    sap_btd_options o;
    sap_btd_options_init(&o);
    o.algo = algo;
    o.variant = v;
    sap_btd *T = NULL;
    sap_status s = sap_btd_create_csr(ctx, A, k, &o, &T);
    if (s == SAP_OK) s = sap_btd_factor(T);
    sap_btd_stats st;
    if (s == SAP_OK) {
        sap_btd_get_stats(T, &st);
        r.calib = st.time_calibrate, r.factor = st.time_factor;
        snprintf(r.variant, sizeof r.variant, "%s", sap_btd_variant_name(st.variant));
        for (int i = 0; i < solves && s == SAP_OK; i++) {
            double t0 = now();
            s = sap_btd_solve(T, b, x);
            r.solve += now() - t0;
        }
    }
    r.ok = s == SAP_OK;
    if (!r.ok) fprintf(stderr, "  sap_btd %s: %s (%s)\n", sap_btd_algo_name(algo), sap_status_name(s),
                       sap_context_last_error(ctx));
    else r.resid = rel_res(A, x, b);
    sap_btd_destroy(T);
    return r;
}

/* sap's banded solver, P = 1, double, on the band of half-width K = 2k - 1 */
static result run_band(sap_context *ctx, const sap_csr *A, sap_int K, int solves, const double *b, double *x,
                       double max_gflop)
{
    result r = {0};
    const sap_int n = A->nrows;
    if (2.0 * n * (double)K * K * 1e-9 > max_gflop) return r;
    double *band = calloc((size_t)n * (size_t)(2 * K + 1), sizeof(double));
    if (!band) return r;
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p];
            if (j - i <= K && i - j <= K) band[(j - i + K) * n + i] = A->val[p];
        }
    sap_band_options o;
    sap_band_options_init(&o);
    o.method = SAP_BAND_DIRECT;
    sap_band_solver *S = NULL;
    double t0 = now();
    sap_status s = sap_band_solver_create_band(ctx, n, K, band, &o, &S);
    free(band);
    if (s == SAP_OK) s = sap_band_solver_setup(S);
    r.factor = now() - t0;
    for (int i = 0; i < solves && s >= 0; i++) {
        memset(x, 0, sizeof(double) * (size_t)n);
        double t1 = now();
        s = sap_band_solver_solve(S, b, x, NULL);
        r.solve += now() - t1;
    }
    r.ok = s >= 0;
    if (!r.ok) fprintf(stderr, "  band: %s (%s)\n", sap_status_name(s), sap_context_last_error(ctx));
    else r.resid = rel_res(A, x, b);
    snprintf(r.variant, sizeof r.variant, "direct K=%lld", (long long)K);
    sap_band_solver_destroy(S);
    return r;
}

static double *dense_of(const sap_csr *A)
{
    const sap_int n = A->nrows;
    double *M = calloc((size_t)n * (size_t)n, sizeof(double));
    if (!M) return NULL;
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) M[i + A->colind[p] * n] = A->val[p];
    return M;
}

/* dense LU on the host (LAPACK, the BLAS threads) */
static result run_dense_host(const sap_csr *A, int solves, const double *b, double *x, double max_gflop)
{
    result r = {0};
#ifdef SAP_HAVE_OPENBLAS
    const int n = (int)A->nrows, one = 1;
    if (2.0 / 3.0 * (double)n * n * n * 1e-9 > max_gflop) return r;
    double *M = dense_of(A);
    int *ipiv = malloc(sizeof(int) * (size_t)n), info = 0;
    if (!M || !ipiv) {
        free(M), free(ipiv);
        return r;
    }
    double t0 = now();
    dgetrf_(&n, &n, M, &n, ipiv, &info);
    r.factor = now() - t0;
    for (int i = 0; i < solves && info == 0; i++) {
        memcpy(x, b, sizeof(double) * (size_t)n);
        double t1 = now();
        dgetrs_("N", &n, &one, M, &n, ipiv, x, &n, &info, 1);
        r.solve += now() - t1;
    }
    r.ok = info == 0;
    if (r.ok) r.resid = rel_res(A, x, b);
    snprintf(r.variant, sizeof r.variant, "LAPACK dgetrf");
    free(M), free(ipiv);
#else
    (void)A, (void)solves, (void)b, (void)x, (void)max_gflop;
#endif
    return r;
}

/* dense LU on the GPU (cuSOLVER), the matrix uploaded first (not timed) */
static result run_dense_gpu(sap_context *ctx, const sap_csr *A, int solves, const double *b, double *x,
                            double max_gflop)
{
    result r = {0};
#ifdef SAP_HAVE_CUDA
    if (sap_context_backend(ctx) != SAP_BACKEND_CUDA) return r;
    const int n = (int)A->nrows;
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    if ((double)n * n * 8 > 0.6 * (double)fr || 2.0 / 3.0 * (double)n * n * n * 1e-9 > max_gflop) return r;
    double *M = dense_of(A), *dA = NULL, *dB = NULL, *work = NULL;
    int *dpiv = NULL, *dinfo = NULL, lwork = 0, info = 1;
    cusolverDnHandle_t h = NULL;
    if (!M || cusolverDnCreate(&h) != CUSOLVER_STATUS_SUCCESS) goto out;
    if (cudaMalloc((void **)&dA, (size_t)n * n * 8) || cudaMalloc((void **)&dB, (size_t)n * 8) ||
        cudaMalloc((void **)&dpiv, (size_t)n * 4) || cudaMalloc((void **)&dinfo, 4))
        goto out;
    cudaMemcpy(dA, M, (size_t)n * n * 8, cudaMemcpyHostToDevice);
    cusolverDnDgetrf_bufferSize(h, n, n, dA, n, &lwork);
    if (cudaMalloc((void **)&work, (size_t)lwork * 8)) goto out;
    cudaDeviceSynchronize();
    double t0 = now();
    cusolverDnDgetrf(h, n, n, dA, n, work, dpiv, dinfo);
    cudaMemcpy(&info, dinfo, 4, cudaMemcpyDeviceToHost);
    r.factor = now() - t0;
    for (int i = 0; i < solves && info == 0; i++) {
        double t1 = now();
        cudaMemcpy(dB, b, (size_t)n * 8, cudaMemcpyHostToDevice);
        cusolverDnDgetrs(h, CUBLAS_OP_N, n, 1, dA, n, dpiv, dB, n, dinfo);
        cudaMemcpy(x, dB, (size_t)n * 8, cudaMemcpyDeviceToHost);
        r.solve += now() - t1;
    }
    r.ok = info == 0;
    if (r.ok) r.resid = rel_res(A, x, b);
    snprintf(r.variant, sizeof r.variant, "cuSOLVER getrf");
out:
    free(M);
    cudaFree(dA), cudaFree(dB), cudaFree(dpiv), cudaFree(dinfo), cudaFree(work);
    if (h) cusolverDnDestroy(h);
#else
    (void)ctx, (void)A, (void)solves, (void)b, (void)x, (void)max_gflop;
#endif
    return r;
}

int main(int argc, char **argv)
{
    static const int ks_all[] = {64, 96, 128, 256, 384, 512, 640, 768, 896, 1024};
    static const int weak128[] = {51200, 38400, 25600, 12800, 9600, 6400, 5600, 4800, 4000, 3200};
    const char *backend = "auto", *out = "bench/results", *ks_arg = NULL;
    double scale = 1, dense_max = 2e4, band_max = 2e3;
    int solves = 16;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) break;
        if (!strcmp(a, "--backend")) backend = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--ks")) ks_arg = v;
        else if (!strcmp(a, "--scale")) scale = atof(v);
        else if (!strcmp(a, "--solves")) solves = atoi(v);
        else if (!strcmp(a, "--dense-max-gflop")) dense_max = atof(v);
        else if (!strcmp(a, "--band-max-gflop")) band_max = atof(v);
        else {
            fprintf(stderr, "btd: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (scale < 1 || solves < 1) {
        fprintf(stderr, "btd: --scale >= 1 and --solves >= 1\n");
        return 2;
    }
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    if (sap_backend_parse(backend, &cfg.backend) != SAP_OK) return 2;
    sap_context *ctx = NULL;
    if (sap_context_create(&ctx, &cfg) != SAP_OK) {
        fprintf(stderr, "btd: no context for backend %s\n", backend);
        return 1;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/btd.csv", out);
    FILE *csv = fopen(path, "w");
    snprintf(path, sizeof path, "%s/btd.md", out);
    FILE *md = fopen(path, "w");
    if (!csv || !md) {
        fprintf(stderr, "btd: cannot write under %s\n", out);
        return 1;
    }
    const char *dev = sap_context_device_name(ctx);
    fprintf(csv, "backend,device,k,nb,n,method,variant,calibrate,factor,solves,solve_total,total,residual\n");
    fprintf(md, "# bench/btd: block-tridiagonal solvers, factor + %d solves\n\nbackend %s: %s.  Matrix: "
                "gen:radiative (albedo 0.75, shift 0.75, bw = k), k and nb from Table 3 of Lamas Davina & Roman "
                "(2018) (block rows of one process in the weak-scaling runs)%s.  Times in seconds; total = factor + "
                "%d solves (calibration apart); ratio = anchor total / best sap_btd total.\n\n",
            solves, sap_backend_name(sap_context_backend(ctx)), dev, scale > 1 ? ", divided by --scale" : "",
            solves);
    fprintf(md, "| k | nb | n | method | variant | calibrate | factor | %d solves | total | residual | ratio |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|\n", solves);
    printf("%-5s %-5s %-7s %-14s %-16s %9s %9s %9s %9s %9s\n", "k", "nb", "n", "method", "variant", "calib", "factor",
           "solves", "total", "residual");
    for (size_t ci = 0; ci < sizeof ks_all / sizeof *ks_all; ci++) {
        int k = ks_all[ci];
        char key[16];
        snprintf(key, sizeof key, "%d", k);
        if (!bench_in_list(ks_arg, key)) continue;
        int nb = (int)((weak128[ci] / 128.0) / scale + 0.5);
        if (nb < 2) nb = 2;
        sap_int n = (sap_int)k * nb;
        sap_csr *A = NULL;
        if (sap_gen_radiative(ctx, n, 0.75, 1000.0, k, 0.75, &A) != SAP_OK) {
            fprintf(stderr, "btd: generator failed: %s\n", sap_context_last_error(ctx));
            continue;
        }
        double *xs = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
        double *x = malloc(sizeof(double) * (size_t)n);
        sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, xs);
        sap_csr_spmv(A, 1.0, xs, 0.0, b);
        struct {
            const char *name;
            result r;
        } rows[8];
        int nr = 0;
        rows[nr].name = "bcyclic", rows[nr++].r = run_btd(ctx, A, k, SAP_BTD_BCYCLIC, SAP_BTD_VARIANT_AUTO, solves, b, x);
        for (int v = SAP_BTD_GETRS_BATCHED; v <= SAP_BTD_GETRI; v++)
            rows[nr].name = "bcyclic", rows[nr++].r = run_btd(ctx, A, k, SAP_BTD_BCYCLIC, (sap_btd_variant)v, solves, b, x);
        rows[nr].name = "spike P=4", rows[nr++].r = run_btd(ctx, A, k, SAP_BTD_SPIKE, SAP_BTD_VARIANT_AUTO, solves, b, x);
        int first_anchor = nr;
        rows[nr].name = "band (sap)", rows[nr++].r = run_band(ctx, A, 2 * k - 1, solves, b, x, band_max);
        rows[nr].name = "dense LU", rows[nr++].r = sap_context_backend(ctx) == SAP_BACKEND_CUDA
                                                        ? run_dense_gpu(ctx, A, solves, b, x, dense_max)
                                                        : run_dense_host(A, solves, b, x, dense_max);
        double best = INFINITY;
        for (int i = 0; i < first_anchor; i++)
            if (rows[i].r.ok && rows[i].r.factor + rows[i].r.solve < best) best = rows[i].r.factor + rows[i].r.solve;
        for (int i = 0; i < nr; i++) {
            result *r = &rows[i].r;
            double tot = r->factor + r->solve;
            if (!r->ok) {
                printf("%-5d %-5d %-7lld %-14s %-16s %9s\n", k, nb, (long long)n, rows[i].name, "-",
                       i >= first_anchor ? "n/a (limit)" : "failed");
                fprintf(md, "| %d | %d | %lld | %s | - | | | | n/a | | |\n", k, nb, (long long)n, rows[i].name);
                continue;
            }
            printf("%-5d %-5d %-7lld %-14s %-16s %9.4f %9.4f %9.4f %9.4f %9.1e\n", k, nb, (long long)n, rows[i].name,
                   r->variant, r->calib, r->factor, r->solve, tot, r->resid);
            fprintf(csv, "%s,\"%s\",%d,%d,%lld,%s,%s,%.6f,%.6f,%d,%.6f,%.6f,%.3e\n",
                    sap_backend_name(sap_context_backend(ctx)), dev, k, nb, (long long)n, rows[i].name, r->variant,
                    r->calib, r->factor, solves, r->solve, tot, r->resid);
            char ratio[32] = "";
            if (i >= first_anchor && isfinite(best)) snprintf(ratio, sizeof ratio, "%.1fx", tot / best);
            fprintf(md, "| %d | %d | %lld | %s | %s | %.4f | %.4f | %.4f | %s%.4f%s | %.1e | %s |\n", k, nb,
                    (long long)n, rows[i].name, r->variant, r->calib, r->factor, r->solve,
                    (i < first_anchor && tot == best) ? "**" : "", tot, (i < first_anchor && tot == best) ? "**" : "",
                    r->resid, ratio);
        }
        fflush(csv), fflush(md);
        free(xs), free(b), free(x);
        sap_csr_destroy(A);
    }
    fclose(csv);
    fclose(md);
    sap_context_destroy(ctx);
    return 0;
}
