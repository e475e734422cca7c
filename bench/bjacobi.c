/* bjacobi.c -- block-Jacobi benchmark (the batched kernels of device/bjacobi_kernels.h and
 * the "bjacobi" / "bjacobi-adaptive" preconditioners).
 *
 * Part 1 (cuda): batched extraction + factorization throughput on block-diagonal CSR
 *   matrices of uniform block sizes 4, 8, 16, 24, 32 and a variable mix (sizes 1..32
 *   uniformly), 1e5 and 1e6 blocks (fewer where the CSR would pass 1.1e9 entries, said in
 *   the table), Gauss-Jordan (explicit inverse) and LU, all blocks in fp64, against
 *   cuBLAS's batched getrf + getri (dense blocks already in device memory, no extraction;
 *   the mix: one batch per size) in the same run.  blocks/s, GFLOP/s (2 s^3 per
 *   inversion, 2/3 s^3 per LU) and the bytes floor: the CSR entries read (12 bytes each +
 *   4 per row) + the factors written, at the device copy bandwidth measured in the run.
 *   Times: CUDA events around the batched kernels (results left on the device), best of 5.
 * Part 2 (cuda): apply z = D^{-1} r on the mix (1e6 blocks) with every block in fp64,
 *   fp32, fp16 and adaptive storage, GJ and LU, against its bytes floor (the blocks'
 *   storage + r + z at the copy bandwidth).
 * Part 3 (the backend of --backend): CG with scalar Jacobi, bjacobi, bjacobi-adaptive (and
 *   IC(0), CG's incomplete factorization, where the build registers "ic0")
 *   on the collection's matrices with natural blocks and on gen:elasticity3d systems:
 *   iterations, setup and solve seconds, the share of blocks stored in each precision.
 *
 * usage: bjacobi [--backend cpu|cuda] [--out DIR] [--matrix-dir DIR] [--quick]
 *                [--no-factor] [--no-solver] [--parts factor,apply,solver] [--sizes 4,16,0]
 *                [--filter SUBSTR]
 *   --no-factor: no part 1 nor 2; --parts: the parts named only; --sizes: part 1's block
 *   sizes (0: the mix; default 4,8,16,24,32,0).
 * Writes DIR/bjacobi_<backend>.csv and .md (default DIR: bench/results of the source tree). */
#define _POSIX_C_SOURCE 200809L
#include "sap.h"
#include "device/device.h"
#include "bench_out.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SAP_HAVE_CUDA
#include "device/cuda/cuda_internal.h"
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#endif

static FILE *md, *csv;
/* part 1's block sizes (0: the mix 1..32) */
static int sizes_sel[8] = {4, 8, 16, 24, 32, 0}, nsizes = 6;

static void out(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    if (md) {
        va_start(ap, fmt);
        vfprintf(md, fmt, ap);
        va_end(ap);
        fflush(md); /* a run stopped part way keeps its rows */
    }
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#ifdef SAP_HAVE_CUDA
static uint64_t seed = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* ---- block-diagonal test matrices --------------------------------------------------------- */

/* nb dense blocks of the given sizes along the diagonal: entries uniform in [-1, 1], the
 * diagonal shifted by s 2^-k (k in 0..kmax random: a spread of condition numbers) */
static sap_csr *block_diag(sap_context *ctx, sap_int nb, const int *sz, int kmax)
{
    sap_int n = 0, nnz = 0;
    for (sap_int b = 0; b < nb; b++) n += sz[b], nnz += (sap_int)sz[b] * sz[b];
    sap_csr *A = NULL;
    if (sap_csr_create(ctx, n, n, nnz, &A) != SAP_OK) return NULL;
    sap_int r = 0, q = 0;
    for (sap_int b = 0; b < nb; b++) {
        const int s = sz[b];
        const double shift = s * ldexp(1.0, -(int)((urand() + 1.0) * 0.5 * (kmax + 0.999)));
        for (int i = 0; i < s; i++, r++) {
            A->rowptr[r + 1] = A->rowptr[r] + s;
            for (int j = 0; j < s; j++, q++) {
                A->colind[q] = r - i + j;
                A->val[q] = urand() + (i == j ? shift : 0.0);
            }
        }
    }
    return A;
}

typedef struct bjfact {
    sap_context *ctx;
    sap_int *rows, *off;
    sap_bj_fact F;
} bjfact;

/* the layout of the blocks sz[] in order (no detection), prepared and loaded */
static sap_status bj_build(sap_context *ctx, const sap_csr *A, sap_int nb, const int *sz, int variant, bjfact *f)
{
    memset(f, 0, sizeof(*f));
    f->ctx = ctx;
    f->rows = malloc(sizeof(sap_int) * (size_t)A->nrows);
    f->off = malloc(sizeof(sap_int) * (size_t)(nb + 1));
    if (!f->rows || !f->off) return SAP_ERR_OUT_OF_MEMORY;
    for (sap_int i = 0; i < A->nrows; i++) f->rows[i] = i;
    f->off[0] = 0;
    for (sap_int b = 0; b < nb; b++) f->off[b + 1] = f->off[b] + sz[b];
    f->F.variant = variant;
    f->F.cond_fp16 = 1e2;
    f->F.cond_fp32 = 1e6;
    sap_status st = sap__bj_init(ctx, &f->F, A, nb, f->rows, f->off);
    return st < 0 ? st : f->F.kt->load(&f->F, A);
}

static void bj_free(bjfact *f)
{
    sap__bj_fini(&f->F);
    free(f->rows);
    free(f->off);
}

#define CB(call)                                                                                     \
    do {                                                                                             \
        cublasStatus_t s_ = (call);                                                                  \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                           \
            fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, (int)s_);    \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

static double copy_bw; /* device copy bandwidth, bytes (read + written) per second */

static void measure_copy_bw(cudaStream_t s)
{
    const size_t bytes = (size_t)1 << 30;
    void *a, *b;
    CU(cudaMalloc(&a, bytes));
    CU(cudaMalloc(&b, bytes));
    CU(cudaMemsetAsync(a, 1, bytes, s));
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int r = 0; r < 6; r++) {
        float ms;
        CU(cudaEventRecord(e0, s));
        CU(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
        CU(cudaEventRecord(e1, s));
        CU(cudaEventSynchronize(e1));
        CU(cudaEventElapsedTime(&ms, e0, e1));
        if (r && ms < best) best = ms;
    }
    copy_bw = 2.0 * (double)bytes / (best * 1e-3);
    CU(cudaFree(a));
    CU(cudaFree(b));
    CU(cudaEventDestroy(e0));
    CU(cudaEventDestroy(e1));
}

typedef void (*timed_fn)(void *);
/* best of reps of fn (after one warm-up), seconds by CUDA events on stream s */
static double best_time(cudaStream_t s, timed_fn fn, void *arg, int reps)
{
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    fn(arg);
    CU(cudaStreamSynchronize(s));
    float best = 1e30f;
    for (int r = 0; r < reps; r++) {
        float ms;
        CU(cudaEventRecord(e0, s));
        fn(arg);
        CU(cudaEventRecord(e1, s));
        CU(cudaEventSynchronize(e1));
        CU(cudaEventElapsedTime(&ms, e0, e1));
        if (ms < best) best = ms;
    }
    CU(cudaEventDestroy(e0));
    CU(cudaEventDestroy(e1));
    return best * 1e-3;
}

static void run_factor(void *arg)
{
    bjfact *f = arg;
    if (f->F.kt->factor(&f->F) < 0) {
        fprintf(stderr, "factor failed: %s\n", sap_context_last_error(f->ctx));
        exit(1);
    }
}

/* cuBLAS getrf + getri on one batch of equal sizes (device arrays prepared) */
typedef struct cublas_batch {
    cublasHandle_t h;
    int s, count;
    double *A, *Acopy, *C;
    double **pA, **pC;
    int *piv, *info;
    cudaStream_t stream;
} cublas_batch;

static void run_cublas(void *arg)
{
    cublas_batch *c = arg;
    /* getrf overwrites A: restore it first (a device copy, timed in as well; stated) */
    CU(cudaMemcpyAsync(c->A, c->Acopy, sizeof(double) * (size_t)c->count * c->s * c->s, cudaMemcpyDeviceToDevice,
                       c->stream));
    CB(cublasDgetrfBatched(c->h, c->s, c->pA, c->s, c->piv, c->info, c->count));
    CB(cublasDgetriBatched(c->h, c->s, (const double *const *)c->pA, c->s, c->piv, c->pC, c->s, c->info, c->count));
}

static void run_copy_only(void *arg)
{
    cublas_batch *c = arg;
    CU(cudaMemcpyAsync(c->A, c->Acopy, sizeof(double) * (size_t)c->count * c->s * c->s, cudaMemcpyDeviceToDevice,
                       c->stream));
}

/* cuBLAS time for the blocks of A (grouped by size): seconds, the restore copy subtracted */
static double cublas_time(cublasHandle_t h, cudaStream_t stream, const sap_csr *A, sap_int nb, const int *sz)
{
    double total = 0;
    for (int s = 1; s <= 32; s++) {
        sap_int count = 0;
        for (sap_int b = 0; b < nb; b++) count += sz[b] == s;
        if (!count) continue;
        const size_t per = (size_t)s * s, elems = per * (size_t)count;
        double *host = malloc(sizeof(double) * elems);
        sap_int k = 0, q = 0;
        for (sap_int b = 0; b < nb; b++) {
            const size_t sq = (size_t)sz[b] * sz[b];
            if (sz[b] == s) memcpy(host + per * (size_t)k++, A->val + q, sizeof(double) * sq);
            q += (sap_int)sq;
        }
        cublas_batch c = {h, s, (int)count, NULL, NULL, NULL, NULL, NULL, NULL, NULL, stream};
        CU(cudaMalloc((void **)&c.A, sizeof(double) * elems));
        CU(cudaMalloc((void **)&c.Acopy, sizeof(double) * elems));
        CU(cudaMalloc((void **)&c.C, sizeof(double) * elems));
        CU(cudaMalloc((void **)&c.pA, sizeof(double *) * (size_t)count));
        CU(cudaMalloc((void **)&c.pC, sizeof(double *) * (size_t)count));
        CU(cudaMalloc((void **)&c.piv, sizeof(int) * (size_t)s * (size_t)count));
        CU(cudaMalloc((void **)&c.info, sizeof(int) * (size_t)count));
        CU(cudaMemcpy(c.Acopy, host, sizeof(double) * elems, cudaMemcpyHostToDevice));
        double **hp = malloc(sizeof(double *) * (size_t)count);
        for (sap_int i = 0; i < count; i++) hp[i] = c.A + per * (size_t)i;
        CU(cudaMemcpy(c.pA, hp, sizeof(double *) * (size_t)count, cudaMemcpyHostToDevice));
        for (sap_int i = 0; i < count; i++) hp[i] = c.C + per * (size_t)i;
        CU(cudaMemcpy(c.pC, hp, sizeof(double *) * (size_t)count, cudaMemcpyHostToDevice));
        const double t = best_time(stream, run_cublas, &c, 5), tc = best_time(stream, run_copy_only, &c, 5);
        total += t - tc > 0 ? t - tc : t;
        free(hp);
        free(host);
        cudaFree(c.A);
        cudaFree(c.Acopy);
        cudaFree(c.C);
        cudaFree(c.pA);
        cudaFree(c.pC);
        cudaFree(c.piv);
        cudaFree(c.info);
    }
    return total;
}

static void part_factor(sap_context *ctx, int quick)
{
    cudaStream_t stream = (cudaStream_t)sap__cuda_stream(ctx);
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, stream));
    measure_copy_bw(stream);
    out("\n## Batched extraction + factorization (fp64 storage)\n\n"
        "device copy bandwidth %.0f GB/s (read + written).  GJ: Gauss-Jordan inverse, LU: factors;\n"
        "cuBLAS: getrf + getri batched on dense blocks already on the device (no extraction;\n"
        "mix: one batch per size).  floor: CSR entries read (12 B each + 4 B a row) + fp64\n"
        "factors written, at the copy bandwidth.\n\n",
        copy_bw / 1e9);
    out("| sizes | blocks | GJ ms | GJ blocks/s | GJ GFLOP/s | GJ / floor | LU ms | LU blocks/s | cuBLAS ms | cuBLAS "
        "blocks/s | cuBLAS / floor | GJ speedup vs cuBLAS |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    const sap_int counts[] = {100000, 1000000};
    for (int si = 0; si < nsizes; si++)
        for (int ci = 0; ci < 2; ci++) {
            if (quick && ci == 1) continue;
            sap_int nb = counts[ci];
            const int s0 = sizes_sel[si];
            const double avg2 = s0 ? (double)s0 * s0 : 33.0 * 65.0 / 6.0; /* E[s^2], s uniform in 1..32 */
            const sap_int cap = (sap_int)(1.1e9 / avg2);
            if (nb > cap) nb = cap;
            int *sz = malloc(sizeof(int) * (size_t)nb);
            double flops_gj = 0, flops_lu = 0, nnz = 0, n = 0, store = 0;
            for (sap_int b = 0; b < nb; b++) {
                sz[b] = s0 ? s0 : 1 + (int)((urand() + 1.0) * 16.0 - 1e-9);
                const double s = sz[b];
                flops_gj += 2 * s * s * s;
                flops_lu += 2.0 / 3.0 * s * s * s;
                nnz += s * s;
                n += s;
                store += 8 * s * s;
            }
            sap_csr *A = block_diag(ctx, nb, sz, 4);
            if (!A) {
                out("| %s | %lld | out of host memory |\n", s0 ? "uniform" : "mix 1..32", (long long)nb);
                free(sz);
                continue;
            }
            double t[2];
            for (int v = 0; v < 2; v++) {
                bjfact f;
                if (bj_build(ctx, A, nb, sz, v, &f) < 0) {
                    fprintf(stderr, "prepare: %s\n", sap_context_last_error(ctx));
                    exit(1);
                }
                f.F.no_results = 1;
                t[v] = best_time(stream, run_factor, &f, 5);
                bj_free(&f);
            }
            const double tc = cublas_time(h, stream, A, nb, sz);
            const double floor_s = (12 * nnz + 4 * (n + 1) + store) / copy_bw;
            char label[32];
            if (s0) snprintf(label, sizeof(label), "%d", s0);
            else snprintf(label, sizeof(label), "mix 1..32");
            out("| %s | %lld | %.3f | %.3g | %.1f | %.2f | %.3f | %.3g | %.3f | %.3g | %.2f | %.2f |\n", label,
                (long long)nb, t[0] * 1e3, nb / t[0], flops_gj / t[0] / 1e9, t[0] / floor_s, t[1] * 1e3, nb / t[1],
                tc * 1e3, nb / tc, tc / floor_s, tc / t[0]);
            fprintf(csv, "factor,%s,%lld,%.6e,%.6e,%.6e,%.6e,%.6e\n", label, (long long)nb, t[0], t[1], tc, floor_s,
                    flops_gj);
            sap_csr_destroy(A);
            free(sz);
        }
    CB(cublasDestroy(h));
}

typedef struct apply_arg {
    bjfact *f;
    sap_vec *r, *z;
} apply_arg;

static void run_apply(void *arg)
{
    apply_arg *a = arg;
    a->f->F.kt->apply(&a->f->F, a->r->data, a->z->data, SAP_DOUBLE);
}

static void part_apply(sap_context *ctx, int quick)
{
    cudaStream_t stream = (cudaStream_t)sap__cuda_stream(ctx);
    const sap_int nb = quick ? 100000 : 1000000;
    int *sz = malloc(sizeof(int) * (size_t)nb);
    for (sap_int b = 0; b < nb; b++) sz[b] = 1 + (int)((urand() + 1.0) * 16.0 - 1e-9);
    sap_csr *A = block_diag(ctx, nb, sz, 30);
    const sap_backend_ops *ops = sap__ops(ctx);
    if (copy_bw <= 0) measure_copy_bw(stream);
    out("\n## Apply z = D^-1 r (mix of sizes 1..32, %lld blocks, %lld rows)\n\n"
        "device copy bandwidth %.0f GB/s (read + written).  floor: the blocks' storage + r read + z\n"
        "written (fp64 vectors) at the copy bandwidth.  GJ: the stored inverse times r; LU: forward\n"
        "and backward substitution with the stored factors (the same storage precision and bytes).\n\n"
        "| storage | fp16 / fp32 / fp64 blocks | MB | GJ ms | floor ms | GJ x floor | LU ms | LU x floor |\n"
        "|---|---|---|---|---|---|---|---|\n",
        (long long)nb, (long long)A->nrows, copy_bw / 1e9);
    static const struct {
        const char *name;
        int adaptive;
        double c16, c32;
    } modes[] = {{"fp64", 0, 0, 0}, {"fp32", 1, -1, INFINITY}, {"fp16", 1, INFINITY, INFINITY}, {"adaptive", 1, 1e2, 1e6}};
    sap_vec r, z;
    ops->vec_create(ctx, A->nrows, SAP_DOUBLE, &r);
    ops->vec_create(ctx, A->nrows, SAP_DOUBLE, &z);
    ops->set(ctx, &r, 1.0);
    for (int m = 0; m < 4; m++) {
        double t[2], bytes = 0, floor_s = 0;
        sap_int cnt[3] = {0, 0, 0};
        for (int v = 0; v < 2; v++) {
            bjfact f;
            if (bj_build(ctx, A, nb, sz, v ? SAP_BJ_LU : SAP_BJ_GJ, &f) < 0) exit(1);
            f.F.adaptive = modes[m].adaptive;
            f.F.cond_fp16 = modes[m].c16;
            f.F.cond_fp32 = modes[m].c32;
            run_factor(&f);
            if (!v) { /* (LU chooses the same precisions: the same kappa_1) */
                for (sap_int b = 0; b < nb; b++) cnt[f.F.bprec[b] % 3]++;
                bytes = sap__bj_apply_bytes(&f.F, 8);
                floor_s = bytes / copy_bw;
            }
            apply_arg a = {&f, &r, &z};
            t[v] = best_time(stream, run_apply, &a, 20);
            bj_free(&f);
        }
        out("| %s | %.1f%% / %.1f%% / %.1f%% | %.1f | %.4f | %.4f | %.2f | %.4f | %.2f |\n", modes[m].name,
            100.0 * cnt[SAP_BJ_FP16] / nb, 100.0 * cnt[SAP_BJ_FP32] / nb, 100.0 * cnt[SAP_BJ_FP64] / nb, bytes / 1e6,
            t[0] * 1e3, floor_s * 1e3, t[0] / floor_s, t[1] * 1e3, t[1] / floor_s);
        fprintf(csv, "apply,%s,%lld,%.6e,%.6e,%.6e,%.6e\n", modes[m].name, (long long)nb, t[0], bytes, floor_s, t[1]);
    }
    ops->vec_destroy(ctx, &r);
    ops->vec_destroy(ctx, &z);
    sap_csr_destroy(A);
    free(sz);
}
#endif /* SAP_HAVE_CUDA */

/* ---- part 3: the solver table ------------------------------------------------------------ */

static void shares(const char *rep, double *p16, double *p32, double *p64)
{
    *p16 = *p32 = *p64 = NAN;
    const char *s = strstr(rep, "storage: ");
    if (s) sscanf(s, "storage: fp16 %lf%%, fp32 %lf%%, fp64 %lf%%", p16, p32, p64);
}

static void solve_row(sap_context *ctx, const char *name, const sap_csr *A)
{
    /* IC(0) where the build has it (CG needs a symmetric preconditioner: IC(0), not ILU(0);
     * the row is left out when the type is not registered) */
    const char *pcs[4] = {"jacobi", "bjacobi", "bjacobi-adaptive", "ic0"};
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x = malloc(sizeof(double) * (size_t)n);
    for (sap_int i = 0; i < n; i++) b[i] = 1.0;
    sap_matrix *M = NULL;
    if (sap_matrix_create(ctx, A, NULL, &M) != SAP_OK) {
        out("| %s | matrix: %s |\n", name, sap_context_last_error(ctx));
        free(b);
        free(x);
        return;
    }
    for (int k = 0; k < 4; k++) {
        sap_precond *P = NULL;
        if (k == 3) {
            int have = 0;
            for (int t = 0; t < sap_precond_type_count(); t++) have |= !strcmp(sap_precond_type_name(t), pcs[k]);
            if (!have) break;
        }
        sap_krylov *K = NULL;
        sap_krylov_stats ks;
        memset(&ks, 0, sizeof(ks));
        memset(x, 0, sizeof(double) * (size_t)n);
        double t0 = wall();
        sap_status st = sap_precond_create(ctx, pcs[k], &P);
        if (st >= 0) st = sap_precond_setup_numeric(P, A);
        const double tsetup = wall() - t0;
        char rep[2048] = "";
        if (st >= 0) sap_precond_report(P, 0, rep, sizeof(rep));
        sap_krylov_options opt;
        sap_krylov_options_init(&opt);
        opt.type = SAP_KRYLOV_CG;
        opt.tol = 1e-8;
        opt.maxit = 20000;
        opt.sync_timing = 0;
        if (st >= 0) st = sap_krylov_create(ctx, &opt, &K);
        if (st >= 0) st = sap_krylov_solve(K, M, P, b, x, &ks);
        double p16, p32, p64;
        shares(rep, &p16, &p32, &p64);
        const char *blk = strstr(rep, "blocks: ");
        char blocks[64] = "-";
        if (blk && sscanf(blk, "blocks: %63[^,(]", blocks) == 1) {
            size_t l = strlen(blocks);
            while (l > 0 && blocks[l - 1] == ' ') blocks[--l] = '\0';
        }
        char prec[64] = "-";
        if (k && !isnan(p16)) snprintf(prec, sizeof(prec), "%.1f / %.1f / %.1f %%", p16, p32, p64);
        out("| %s | %lld | %s | %s | %s | %.1f | %.4f | %.4f | %.4f | %.3g | %s |\n", name, (long long)n, pcs[k],
            k ? blocks : "-", prec, ks.iterations, tsetup, ks.time_total, tsetup + ks.time_total, ks.true_residual,
            sap_status_name(st));
        fprintf(csv, "solve,%s,%lld,%s,%s,%.1f,%.6e,%.6e,%.3e,%.2f,%.2f,%.2f,%s\n", name, (long long)n, pcs[k],
                k ? blocks : "-", ks.iterations, tsetup, ks.time_total, ks.true_residual, p16, p32, p64,
                sap_status_name(st));
        sap_krylov_destroy(K);
        sap_precond_destroy(P);
    }
    sap_matrix_destroy(M);
    free(b);
    free(x);
}

static void part_solver(sap_context *ctx, const char *mdir, const char *filter, int quick)
{
    const int gpu = sap_context_backend(ctx) == SAP_BACKEND_CUDA;
    out("\n## CG with scalar Jacobi, block-Jacobi (fp64), adaptive block-Jacobi (and IC(0)) (%s)\n\n"
        "tol 1e-8 (relative residual), b = 1, x0 = 0, maxblock 32; setup = detection + extraction +\n"
        "factorization (+ transfers), solve = the CG iterations.\n\n"
        "| matrix | n | preconditioner | blocks | fp16 / fp32 / fp64 | iterations | setup s | solve s | total s | true "
        "residual | status |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
        gpu ? "cuda" : "cpu");
    const char *mats[] = {"bcsstk13", "bcsstk14", "bcsstk15", "bcsstk16", "bcsstk17", "bcsstk18", "s2rmt3m1",
                          "s3rmt3m3", "Andrews", "G3_circuit"};
    const char *gens_gpu[] = {"gen:elasticity3d:n=24", "gen:elasticity3d:n=64", "gen:elasticity3d:n=48,dof=6"};
    const char *gens_cpu[] = {"gen:elasticity3d:n=16", "gen:elasticity3d:n=32", "gen:elasticity3d:n=20,dof=6"};
    for (size_t i = 0; i < sizeof(mats) / sizeof(mats[0]); i++) {
        if (filter && !strstr(mats[i], filter)) continue;
        if (!gpu && !strcmp(mats[i], "G3_circuit") && quick) continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s.mtx.gz", mdir, mats[i]);
        sap_csr *A = NULL;
        if (sap_matrix_load(ctx, path, NULL, &A) < 0) {
            printf("skip %s: %s\n", mats[i], sap_context_last_error(ctx));
            continue;
        }
        solve_row(ctx, mats[i], A);
        sap_csr_destroy(A);
    }
    for (int i = 0; i < 3; i++) {
        const char *spec = gpu ? gens_gpu[i] : gens_cpu[i];
        if (filter && !strstr(spec, filter)) continue;
        if (quick && i == 1) continue;
        sap_csr *A = NULL;
        if (sap_matrix_load(ctx, spec, NULL, &A) < 0) continue;
        solve_row(ctx, spec, A);
        sap_csr_destroy(A);
    }
}

int main(int argc, char **argv)
{
    const char *outdir = SAP_SOURCE_DIR "/bench/results", *mdir = getenv("SAP_MATRIX_DIR"), *filter = NULL;
    if (!mdir) mdir = SAP_MATRIX_DIR_DEFAULT;
    sap_backend backend = SAP_BACKEND_AUTO;
    int quick = 0, do_factor = 1, do_apply = 1, do_solver = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) outdir = argv[++i];
        else if (!strcmp(argv[i], "--matrix-dir") && i + 1 < argc) mdir = argv[++i];
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            if (sap_backend_parse(argv[++i], &backend) != SAP_OK) {
                fprintf(stderr, "bjacobi: unknown backend '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-factor")) do_factor = do_apply = 0;
        else if (!strcmp(argv[i], "--parts") && i + 1 < argc) {
            const char *l = argv[++i];
            do_factor = strstr(l, "factor") != NULL;
            do_apply = strstr(l, "apply") != NULL;
            do_solver = strstr(l, "solver") != NULL;
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            const char *l = argv[++i];
            nsizes = 0;
            for (char *e; *l && nsizes < 8; l = *e ? e + 1 : e) {
                const long v = strtol(l, &e, 10);
                if (e == l || v < 0 || v > 32) {
                    fprintf(stderr, "bjacobi: bad --sizes '%s'\n", argv[i]);
                    return 2;
                }
                sizes_sel[nsizes++] = (int)v;
            }
        }
        else if (!strcmp(argv[i], "--no-solver")) do_solver = 0;
        else {
            fprintf(stderr, "usage: bjacobi [--backend cpu|cuda] [--out DIR] [--matrix-dir DIR] [--quick]\n"
                            "               [--no-factor] [--no-solver] [--parts factor,apply,solver] [--sizes 4,16,0]\n"
                            "               [--filter SUBSTR]\n");
            return 2;
        }
    }
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = backend;
    sap_context *ctx = NULL;
    if (sap_context_create(&ctx, &cfg) != SAP_OK) {
        fprintf(stderr, "bjacobi: no context: %s\n", ctx ? sap_context_last_error(ctx) : "");
        return 1;
    }
    const int gpu = sap_context_backend(ctx) == SAP_BACKEND_CUDA;
    char path[1200];
    snprintf(path, sizeof(path), "%s/bjacobi_%s.md", outdir, gpu ? "cuda" : "cpu");
    md = fopen(path, "w");
    snprintf(path, sizeof(path), "%s/bjacobi_%s.csv", outdir, gpu ? "cuda" : "cpu");
    csv = fopen(path, "w");
    if (!md || !csv) {
        fprintf(stderr, "bjacobi: cannot write under %s\n", outdir);
        return 1;
    }
    const char *commit = getenv("SAP_COMMIT");
    out("# Block-Jacobi benchmark (%s%s%s)\n\ncommit %s; command: bench/bjacobi%s%s\n", gpu ? "cuda: " : "cpu",
        gpu ? sap_context_device_name(ctx) : "", "", commit ? commit : "see git log", quick ? " --quick" : "",
        gpu ? " --backend cuda" : "");
    fprintf(csv, "part,case,size,a,b,c,d,e,f,g,h,i\n");
#ifdef SAP_HAVE_CUDA
    if (gpu && do_factor) part_factor(ctx, quick);
    if (gpu && do_apply) part_apply(ctx, quick);
#endif
    if (!gpu && (do_factor || do_apply)) out("\n(batched factorization and apply tables: cuda only)\n");
    if (do_solver) part_solver(ctx, mdir, filter, quick);
    fclose(md);
    fclose(csv);
    sap_context_destroy(ctx);
    return 0;
}
