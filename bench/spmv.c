/* spmv.c -- GPU SpMV benchmark: every SpMV format of the cuda backend (CSR, ELL, SELL-P,
 * HEC, auto, and their kernel variants) and cuSPARSE's CSR SpMV (ALG_DEFAULT and
 * CSR_ALG2, preprocessed) in the same run, on a 3D Poisson matrix (160^3 by default) and
 * on every matrix of the matrix directory.
 *
 * Effective bandwidth counts each matrix and vector byte once.  The reference byte count
 * is the CSR one, 8 nnz (values) + 4 nnz (column indices) + 4 (n + 1) (row pointer) +
 * 8 ncols (x) + 8 nrows (y), and every variant's "GB/s" uses that same count, so ratios of
 * GB/s are ratios of times; "own GB/s" uses the bytes of the variant's own arrays.
 * Times: CUDA events around batches of back-to-back products (y = A x, beta = 0) on the
 * context's stream after a warm-up; the median over batches.  Also measures a
 * device-to-device copy (bytes read + written) in the same run.
 *
 * Usage: spmv [--out DIR] [--matrix-dir DIR] [--poisson N] [--filter SUBSTR]
 *             [--no-matrices] [--batches N] [--min-batch-ms X]
 * Writes DIR/spmv.csv and DIR/spmv.md (default DIR: bench/results of the source tree).
 * SAP_COMMIT in the environment names the commit in the report. */
#define _POSIX_C_SOURCE 200809L
#include "sap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SAP_HAVE_CUDA
int main(void)
{
    printf("bench/spmv needs the CUDA backend; this build has none.\n");
    return 0;
}
#else

#include "device/cuda/cuda_internal.h"

#include <cuda_runtime_api.h>
#include <cusparse.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>

/* ---- output captured for the markdown report ------------------------------------------ */

#include "bench_out.h"



/* ---- timing -------------------------------------------------------------------------- */

static int g_batches = 11;
static double g_min_batch_ms = 2.0;


/* ---- our formats ------------------------------------------------------------------------ */

typedef struct ours {
    sap_context *ctx;
    const sap_backend_ops *ops;
    sap_spmat *M;
    sap_vec *x, *y;
    int failed;
} ours;

static void run_ours(void *arg)
{
    ours *o = arg;
    if (o->ops->spmv(o->ctx, o->M, 1.0, o->x, 0.0, o->y) != SAP_OK) o->failed = 1;
}

typedef struct cusp {
    cusparseHandle_t h;
    cusparseSpMatDescr_t A;
    cusparseDnVecDescr_t x, y;
    cusparseSpMVAlg_t alg;
    void *buf;
} cusp;

static void run_cusp(void *arg)
{
    cusp *c = arg;
    const double one = 1.0, zero = 0.0;
    CUSP(cusparseSpMV(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, c->A, c->x, &zero, c->y, CUDA_R_64F, c->alg,
                      c->buf));
}

/* ---- one matrix ---------------------------------------------------------------------- */

typedef struct variant {
    const char *name;
    sap_spmv_format fmt;
    int knob, value; /* -1: defaults */
} variant;

static const variant variants[] = {
    {"auto", SAP_FORMAT_AUTO, -1, 0},   {"csr", SAP_FORMAT_CSR, -1, 0},     {"ell", SAP_FORMAT_ELL, -1, 0},
    {"sellp", SAP_FORMAT_SELLP, -1, 0}, {"hec", SAP_FORMAT_HEC, -1, 0},     {"csr.t1", SAP_FORMAT_CSR, 2, 1},
    {"csr.t2", SAP_FORMAT_CSR, 2, 2},   {"csr.t4", SAP_FORMAT_CSR, 2, 4},   {"csr.t8", SAP_FORMAT_CSR, 2, 8},
    {"csr.t16", SAP_FORMAT_CSR, 2, 16}, {"csr.t32", SAP_FORMAT_CSR, 2, 32}, {"ell.r2", SAP_FORMAT_ELL, 0, 2},
    {"sellp.t1", SAP_FORMAT_SELLP, 1, 1}, {"sellp.t2", SAP_FORMAT_SELLP, 1, 2}, {"sellp.t4", SAP_FORMAT_SELLP, 1, 4},
    {"sellp.t8", SAP_FORMAT_SELLP, 1, 8}, {"hec.r2", SAP_FORMAT_HEC, 0, 2},
};
#define NVAR ((int)(sizeof(variants) / sizeof(variants[0])))

typedef struct summary {
    char name[128];
    sap_int n, nnz;
    char auto_fmt[16];
    double t_auto, t_cusp, t_cusp2, t_best, csr_bytes;
    char best[16];
} summary;

static summary *sums = NULL;
static int nsums = 0;
static FILE *csv = NULL;

static double rel_err(const double *a, const double *b, sap_int n)
{
    double d = 0, s = 0;
    for (sap_int i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]);
        if (e > d || isnan(e)) d = e;
        if (fabs(b[i]) > s) s = fabs(b[i]);
    }
    return s > 0 ? d / s : d;
}

static void bench_matrix(sap_context *ctx, const char *name, const sap_csr *A)
{
    const sap_backend_ops *ops = sap__backend_cuda_ops();
    cudaStream_t stream = (cudaStream_t)sap__cuda_stream(ctx);
    const sap_int n = A->nrows, m = A->ncols, nnz = A->nnz;
    const double csr_bytes = 12.0 * nnz + 4.0 * (n + 1) + 8.0 * m + 8.0 * n;
    double *hx = malloc(sizeof(double) * (size_t)(m + 1)), *href = malloc(sizeof(double) * (size_t)(n + 1));
    double *hy = malloc(sizeof(double) * (size_t)(n + 1));
    sap_rng r;
    sap__rng_seed(&r, 42);
    for (sap_int j = 0; j < m; j++) hx[j] = 2.0 * sap__rng_uniform(&r) - 1.0;
    sap_vec x, y;
    if (ops->vec_create(ctx, m, SAP_DOUBLE, &x) != SAP_OK || ops->vec_create(ctx, n, SAP_DOUBLE, &y) != SAP_OK ||
        ops->vec_upload(ctx, &x, hx) != SAP_OK) {
        say("%s: cannot create vectors: %s\n", name, sap_context_last_error(ctx));
        exit(1);
    }

    /* cuSPARSE on the arrays of our CSR (32-bit indices, double values) */
    sap_spmat *Mc = NULL;
    if (ops->spmat_create(ctx, A, SAP_FORMAT_CSR, SAP_DOUBLE, &Mc) != SAP_OK) {
        say("%s: %s\n", name, sap_context_last_error(ctx));
        exit(1);
    }
    sap_cuda_spmat_view v;
    sap__cuda_spmat_view(Mc, &v);
    cusp cs;
    memset(&cs, 0, sizeof(cs));
    CUSP(cusparseCreate(&cs.h));
    CUSP(cusparseSetStream(cs.h, stream));
    CUSP(cusparseCreateCsr(&cs.A, n, m, nnz, (void *)v.rowptr, (void *)v.colind, (void *)v.val, CUSPARSE_INDEX_32I,
                           CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    CUSP(cusparseCreateDnVec(&cs.x, m, x.data, CUDA_R_64F));
    CUSP(cusparseCreateDnVec(&cs.y, n, y.data, CUDA_R_64F));
    double t_cusp[2] = {0, 0};
    const cusparseSpMVAlg_t algs[2] = {CUSPARSE_SPMV_ALG_DEFAULT, CUSPARSE_SPMV_CSR_ALG2};
    const double one = 1.0, zero = 0.0;
    for (int a = 0; a < 2; a++) {
        cs.alg = algs[a];
        size_t bs = 0;
        CUSP(cusparseSpMV_bufferSize(cs.h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, cs.A, cs.x, &zero, cs.y, CUDA_R_64F,
                                     cs.alg, &bs));
        CU(cudaMalloc(&cs.buf, bs ? bs : 16));
        CUSP(cusparseSpMV_preprocess(cs.h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, cs.A, cs.x, &zero, cs.y, CUDA_R_64F,
                                     cs.alg, cs.buf));
        t_cusp[a] = bench_time_calls(stream, run_cusp, &cs, g_batches, g_min_batch_ms);
        if (a == 0) {
            CU(cudaStreamSynchronize(stream));
            ops->vec_download(ctx, &y, href);
        }
        CU(cudaFree(cs.buf));
        cs.buf = NULL;
        /* a fresh matrix descriptor for the next algorithm (preprocessing is per descriptor) */
        CUSP(cusparseDestroySpMat(cs.A));
        CUSP(cusparseCreateCsr(&cs.A, n, m, nnz, (void *)v.rowptr, (void *)v.colind, (void *)v.val, CUSPARSE_INDEX_32I,
                               CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    }
    CUSP(cusparseDestroySpMat(cs.A));
    CUSP(cusparseDestroyDnVec(cs.x));
    CUSP(cusparseDestroyDnVec(cs.y));
    CUSP(cusparseDestroy(cs.h));
    ops->spmat_destroy(ctx, Mc);
    fprintf(csv, "%s,%lld,%lld,%lld,cusparse,csr,%.4f,%.2f,%.2f,0\n", name, (long long)n, (long long)m, (long long)nnz,
            t_cusp[0] * 1e6, csr_bytes / t_cusp[0] * 1e-9, csr_bytes / t_cusp[0] * 1e-9);
    fprintf(csv, "%s,%lld,%lld,%lld,cusparse.alg2,csr,%.4f,%.2f,%.2f,0\n", name, (long long)n, (long long)m,
            (long long)nnz, t_cusp[1] * 1e6, csr_bytes / t_cusp[1] * 1e-9, csr_bytes / t_cusp[1] * 1e-9);

    /* row statistics, to skip ELL layouts that would be absurdly padded */
    sap_int maxlen = 0;
    for (sap_int i = 0; i < n; i++)
        if (A->rowptr[i + 1] - A->rowptr[i] > maxlen) maxlen = A->rowptr[i + 1] - A->rowptr[i];
    const double ell_slots = (double)((n + 31) / 32 * 32) * (double)maxlen;

    double t[NVAR];
    char auto_fmt[16] = "?";
    const char *auto_reason = "";
    double best = INFINITY;
    const char *best_name = "-";
    for (int k = 0; k < NVAR; k++) {
        t[k] = NAN;
        const variant *va = &variants[k];
        if ((va->fmt == SAP_FORMAT_ELL) && ell_slots > 8.0 * nnz + 1e6) continue;
        sap_spmat *M = NULL;
        sap_status st = ops->spmat_create(ctx, A, va->fmt, SAP_DOUBLE, &M);
        if (st != SAP_OK) {
            say("  %s %s: %s\n", name, va->name, sap_context_last_error(ctx));
            continue;
        }
        if (va->knob >= 0) sap__cuda_spmat_tune(M, va->knob, va->value);
        if (va->fmt == SAP_FORMAT_AUTO) {
            snprintf(auto_fmt, sizeof(auto_fmt), "%s", sap_spmv_format_name(M->format));
            auto_reason = M->reason;
        }
        ours o = {ctx, ops, M, &x, &y, 0};
        ops->set(ctx, &y, NAN); /* poison: every entry must be written */
        run_ours(&o);
        ops->vec_download(ctx, &y, hy);
        double err = rel_err(hy, href, n);
        t[k] = bench_time_calls(stream, run_ours, &o, g_batches, g_min_batch_ms);
        if (o.failed) say("  %s %s: spmv failed: %s\n", name, va->name, sap_context_last_error(ctx));
        if (err > 1e-12) say("  %s %s: WRONG RESULT, relative error %.3g against cuSPARSE\n", name, va->name, err);
        double own = sap__cuda_spmat_bytes(M);
        fprintf(csv, "%s,%lld,%lld,%lld,%s,%s,%.4f,%.2f,%.2f,%.3g\n", name, (long long)n, (long long)m, (long long)nnz,
                va->name, sap_spmv_format_name(M->format), t[k] * 1e6, csr_bytes / t[k] * 1e-9, own / t[k] * 1e-9, err);
        if (k > 0 && t[k] < best) {
            best = t[k];
            best_name = va->name;
        }
        ops->spmat_destroy(ctx, M);
    }
    fflush(csv);
    ops->vec_destroy(ctx, &x);
    ops->vec_destroy(ctx, &y);

#define GBS(tt) (isnan(tt) ? 0.0 : csr_bytes / (tt) * 1e-9)
    say("%-24s %9lld %10lld | %8.2f %8.2f %8.2f %8.2f | %8.2f %-5s | %8.2f %8.2f | %5.2fx | best %s %.2f\n", name,
        (long long)n, (long long)nnz, GBS(t[1]), GBS(t[2]), GBS(t[3]), GBS(t[4]), GBS(t[0]), auto_fmt, GBS(t_cusp[0]),
        GBS(t_cusp[1]), t_cusp[0] / t[0], best_name, GBS(best));
    summary *s = realloc(sums, sizeof(summary) * (size_t)(nsums + 1));
    if (s) {
        sums = s;
        summary *e = &sums[nsums++];
        memset(e, 0, sizeof(*e));
        snprintf(e->name, sizeof(e->name), "%s", name);
        e->n = n;
        e->nnz = nnz;
        snprintf(e->auto_fmt, sizeof(e->auto_fmt), "%s", auto_fmt);
        e->t_auto = t[0];
        e->t_cusp = t_cusp[0];
        e->t_cusp2 = t_cusp[1];
        e->t_best = best;
        e->csr_bytes = csr_bytes;
        snprintf(e->best, sizeof(e->best), "%s", best_name);
    }
    (void)auto_reason;
    free(hx);
    free(hy);
    free(href);
}

static double copy_bandwidth(cudaStream_t stream)
{
    const size_t bytes = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    CU(cudaMalloc(&a, bytes));
    CU(cudaMalloc(&b, bytes));
    CU(cudaMemsetAsync(a, 1, bytes, stream));
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    double t[11];
    for (int i = 0; i < 13; i++) {
        CU(cudaEventRecord(e0, stream));
        CU(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
        CU(cudaEventRecord(e1, stream));
        CU(cudaEventSynchronize(e1));
        float ms;
        CU(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 2) t[i - 2] = ms * 1e-3;
    }
    qsort(t, 11, sizeof(double), bench_cmp_double);
    CU(cudaEventDestroy(e0));
    CU(cudaEventDestroy(e1));
    CU(cudaFree(a));
    CU(cudaFree(b));
    return 2.0 * (double)bytes / t[5] * 1e-9;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

int main(int argc, char **argv)
{
    const char *outdir = SAP_SOURCE_DIR "/bench/results";
    const char *matdir = getenv("SAP_MATRIX_DIR");
    if (!matdir || !*matdir) matdir = SAP_MATRIX_DIR_DEFAULT;
    const char *filter = NULL;
    int poisson = 160, no_matrices = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) outdir = argv[++i];
        else if (!strcmp(argv[i], "--matrix-dir") && i + 1 < argc) matdir = argv[++i];
        else if (!strcmp(argv[i], "--poisson") && i + 1 < argc) poisson = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!strcmp(argv[i], "--no-matrices")) no_matrices = 1;
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc) g_batches = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-batch-ms") && i + 1 < argc) g_min_batch_ms = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--out DIR] [--matrix-dir DIR] [--poisson N] [--filter S] [--no-matrices] "
                            "[--batches N] [--min-batch-ms X]\n", argv[0]);
            return 2;
        }
    }
    if (g_batches < 1) g_batches = 1;
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_CUDA;
    cfg.print_level = SAP_PRINT_SILENT;
    sap_context *ctx = NULL;
    sap_status st = sap_context_create(&ctx, &cfg);
    if (st != SAP_OK) {
        printf("bench/spmv: no CUDA device (%s); nothing to measure.\n", sap_status_name(st));
        return 0;
    }
    cudaStream_t stream = (cudaStream_t)sap__cuda_stream(ctx);
    mkdir(outdir, 0755);
    char path[1024];
    snprintf(path, sizeof(path), "%s/spmv.csv", outdir);
    csv = fopen(path, "w");
    if (!csv) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    fprintf(csv, "matrix,nrows,ncols,nnz,variant,format,time_us,gbs_csr_bytes,gbs_own_bytes,rel_err\n");

    char cmd[1024] = "";
    for (int i = 0; i < argc; i++) {
        strncat(cmd, argv[i], sizeof(cmd) - strlen(cmd) - 2);
        strncat(cmd, " ", sizeof(cmd) - strlen(cmd) - 1);
    }
    time_t now = time(NULL);
    char date[64];
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    const char *commit = getenv("SAP_COMMIT");
    say("sap bench/spmv  %s\ndevice: %s\ncommit: %s\ncommand: %s\n", date, sap_context_device_name(ctx),
        commit ? commit : "unknown", cmd);
    double copy = copy_bandwidth(stream);
    say("device-to-device copy: %.1f GB/s (bytes read + written, 1 GiB buffers)\n\n", copy);
    say("GB/s with the CSR byte count (12 nnz + 4 (n+1) + 8 ncols + 8 nrows) for every column; ratio = "
        "t(cuSPARSE default) / t(auto)\n");
    say("%-24s %9s %10s | %8s %8s %8s %8s | %8s %-5s | %8s %8s | %6s | best variant\n", "matrix", "n", "nnz", "csr",
        "ell", "sellp", "hec", "auto", "fmt", "cusp", "cusp2", "ratio");

    if (poisson > 0) {
        sap_csr *A = NULL;
        if (sap_gen_poisson3d(ctx, poisson, poisson, poisson, &A) != SAP_OK) {
            fprintf(stderr, "poisson3d: %s\n", sap_context_last_error(ctx));
            return 1;
        }
        char name[64];
        snprintf(name, sizeof(name), "poisson3d_%d", poisson);
        bench_matrix(ctx, name, A);
        sap_csr_destroy(A);
    }
    if (!no_matrices) {
        DIR *d = opendir(matdir);
        char **names = NULL;
        int nn = 0;
        if (!d) say("matrix directory %s not found: only the Poisson matrix\n", matdir);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            if (!has_suffix(de->d_name, ".mtx") && !has_suffix(de->d_name, ".mtx.gz")) continue;
            if (has_suffix(de->d_name, ".mtx.gz") && !sap_has_zlib()) continue;
            if (filter && !strstr(de->d_name, filter)) continue;
            char **p = realloc(names, sizeof(char *) * (size_t)(nn + 1));
            if (!p) break;
            names = p;
            names[nn++] = strdup(de->d_name);
        }
        if (d) closedir(d);
        if (names) qsort(names, (size_t)nn, sizeof(char *), cmp_str);
        for (int i = 0; i < nn; i++) {
            snprintf(path, sizeof(path), "%s/%s", matdir, names[i]);
            sap_csr *A = NULL;
            if (sap_mm_read_csr(ctx, path, NULL, &A, NULL) < 0) {
                say("%s: %s\n", names[i], sap_context_last_error(ctx));
                free(names[i]);
                continue;
            }
            char name[128];
            snprintf(name, sizeof(name), "%s", names[i]);
            char *dot = strstr(name, ".mtx");
            if (dot) *dot = '\0';
            bench_matrix(ctx, name, A);
            sap_csr_destroy(A);
            free(names[i]);
        }
        free(names);
    }
    fclose(csv);

    /* summary */
    double min_ratio = INFINITY, poisson_ratio = NAN, geo = 0;
    const char *min_name = "-";
    int below = 0;
    for (int i = 0; i < nsums; i++) {
        double rr = sums[i].t_cusp / sums[i].t_auto;
        geo += log(rr);
        if (rr < min_ratio) {
            min_ratio = rr;
            min_name = sums[i].name;
        }
        if (rr < 0.95) below++;
        if (!strncmp(sums[i].name, "poisson3d", 9)) poisson_ratio = rr;
    }
    say("\nauto vs cuSPARSE (ALG_DEFAULT): Poisson %.2fx (target >= 1.3), minimum %.2fx on %s (target >= 0.95), "
        "geometric mean %.2fx over %d matrices, %d below 0.95\n",
        poisson_ratio, min_ratio, min_name, nsums ? exp(geo / nsums) : 0.0, nsums, below);

    snprintf(path, sizeof(path), "%s/spmv.md", outdir);
    FILE *md = fopen(path, "w");
    if (md) {
        fprintf(md, "# GPU SpMV benchmark (bench/spmv)\n\n");
        fprintf(md, "- date: %s\n- device: %s\n- commit: %s\n- command: `%s`\n", date, sap_context_device_name(ctx),
                commit ? commit : "unknown", cmd);
        fprintf(md, "- device-to-device copy: %.1f GB/s (bytes read + written)\n", copy);
        fprintf(md, "- auto vs cuSPARSE CSR (ALG_DEFAULT, preprocessed): Poisson %.2fx (target >= 1.3); minimum %.2fx "
                    "(%s; target >= 0.95); %d of %d matrices below 0.95\n\n",
                poisson_ratio, min_ratio, min_name, below, nsums);
        fprintf(md, "Bytes: the CSR count 12 nnz + 4 (n+1) + 8 ncols + 8 nrows for every variant (so GB/s ratios are "
                    "time ratios); spmv.csv also has each variant's own-bytes GB/s and every kernel variant.\n\n");
        fprintf(md, "| matrix | n | nnz | auto format | auto us | cuSPARSE us | cuSPARSE alg2 us | auto GB/s | "
                    "cuSPARSE GB/s | auto / cuSPARSE | best variant |\n");
        fprintf(md, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|\n");
        for (int i = 0; i < nsums; i++) {
            const summary *e = &sums[i];
            double b = e->csr_bytes;
            fprintf(md, "| %s | %lld | %lld | %s | %.2f | %.2f | %.2f | %.1f | %.1f | %.2f | %s |\n", e->name,
                    (long long)e->n, (long long)e->nnz, e->auto_fmt, e->t_auto * 1e6, e->t_cusp * 1e6, e->t_cusp2 * 1e6,
                    b / e->t_auto * 1e-9, b / e->t_cusp * 1e-9, e->t_cusp / e->t_auto, e->best);
        }
        fprintf(md, "\n## Output\n\n```\n%s```\n", bench_out_text());
        fclose(md);
    }
    free(sums);
    bench_out_free();
    sap_context_destroy(ctx);
    return 0;
}

#endif /* SAP_HAVE_CUDA */
