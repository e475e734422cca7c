/* trsv_cpu.c -- the cpu triangular solves (trsv_kernels.h): level scheduling, an OpenMP
 * loop over the rows of each level (levels narrower than SAP_TRSV_CPU_PAR_ROWS rows run on one
 * thread: the fork/join would cost more than the rows).  Every row is summed sequentially
 * in the stored order, so the result never depends on the thread count.  Both methods run
 * this loop (the synchronization-free method is a GPU method).  The reference of the cuda
 * implementation. */
#include "device/cpu/cpu_internal.h"
#include "device/trsv_kernels.h"

#include <string.h>

#define SAP_TRSV_CPU_PAR_ROWS 8192

typedef struct trsv_cpu {
    sap_trsv_host H;
    float *fval, *fdinv; /* float copies (prec float) */
} trsv_cpu;

#define TRSV_SOLVE(S, REAL, VAL, DINV)                                                                               \
    static void trsv_solve_##S(sap_context *ctx, const sap_trsv_host *H, const REAL *val, const REAL *dinv,         \
                               sap_int nrhs, const REAL *b, REAL *x)                                                \
    {                                                                                                                \
        const sap_int n = H->n;                                                                                      \
        const int nt = sap__threads(ctx);                                                                            \
        for (sap_int l = 0; l < H->nlevels; l++) {                                                                   \
            const sap_int k0 = H->level_ptr[l], k1 = H->level_ptr[l + 1];                                            \
            const int t = k1 - k0 >= SAP_TRSV_CPU_PAR_ROWS ? nt : 1;                                                 \
            SAP_OMP_FOR(t)                                                                                           \
            for (sap_int k = k0; k < k1; k++) {                                                                      \
                const sap_int i = H->order[k];                                                                       \
                for (sap_int r = 0; r < nrhs; r++) {                                                                 \
                    const REAL *br = b + r * n;                                                                      \
                    REAL *xr = x + r * n;                                                                            \
                    REAL s = br[i];                                                                                  \
                    for (sap_int p = H->rowptr[k]; p < H->rowptr[k + 1]; p++) s -= val[p] * xr[H->colind[p]];         \
                    xr[i] = s * dinv[k];                                                                             \
                }                                                                                                    \
            }                                                                                                        \
        }                                                                                                            \
    }
TRSV_SOLVE(d, double, val, dinv)
TRSV_SOLVE(s, float, fval, fdinv)

static void cpu_trsv_destroy(sap_trsv *S)
{
    if (!S) return;
    sap_context *ctx = S->ctx;
    trsv_cpu *c = S->impl;
    if (c) {
        sap__trsv_host_free(ctx, &c->H);
        sap__free(ctx, c->fval);
        sap__free(ctx, c->fdinv);
        sap__free(ctx, c);
    }
    sap__free(ctx, S);
}

extern const sap_trsv_kernels sap__cpu_trsv_kernels;

static sap_status cpu_trsv_analyze(sap_context *ctx, const sap_csr *T, int upper, int unit, sap_precision prec,
                                   sap_trsv_method method, sap_trsv **out)
{
    sap_status st = SAP_OK;
    const double t0 = sap__wtime();
    sap_trsv *S = NULL;
    trsv_cpu *c = NULL;
    *out = NULL;
    SAP_CALLOC(ctx, S, 1);
    S->ctx = ctx;
    S->kt = &sap__cpu_trsv_kernels;
    SAP_CALLOC(ctx, c, 1);
    S->impl = c;
    SAP_TRY(sap__trsv_host_build(ctx, T, upper, unit, &c->H));
    S->n = c->H.n;
    S->nnz_offdiag = c->H.rowptr[c->H.n];
    S->nlevels = c->H.nlevels;
    S->max_level_rows = c->H.max_level_rows;
    S->upper = upper;
    S->unit = unit;
    S->prec = prec;
    /* one loop for both methods: AUTO reports the level method that runs */
    S->method = method == SAP_TRSV_AUTO ? SAP_TRSV_LEVEL : method;
    S->reason = method == SAP_TRSV_AUTO ? "cpu: OpenMP level sets" : "requested (cpu: runs the level sets)";
    if (prec == SAP_FLOAT) {
        const sap_int nz = S->nnz_offdiag;
        SAP_ALLOC(ctx, c->fval, nz > 0 ? nz : 1);
        SAP_ALLOC(ctx, c->fdinv, S->n > 0 ? S->n : 1);
        for (sap_int p = 0; p < nz; p++) c->fval[p] = (float)c->H.val[p];
        for (sap_int k = 0; k < S->n; k++) c->fdinv[k] = (float)c->H.dinv[k];
    }
    S->t_analysis = sap__wtime() - t0;
    *out = S;
cleanup:
    if (st < 0) cpu_trsv_destroy(S);
    return st;
}

static sap_status cpu_trsv_solve(sap_trsv *S, sap_int nrhs, const void *b, void *x)
{
    trsv_cpu *c = S->impl;
    if (nrhs < 0 || (nrhs > 0 && (!b || !x)))
        return SAP_ERROR(S->ctx, SAP_ERR_INVALID, "trsv: bad right-hand sides (%lld)", (long long)nrhs);
    if (S->prec == SAP_FLOAT) trsv_solve_s(S->ctx, &c->H, c->fval, c->fdinv, nrhs, b, x);
    else trsv_solve_d(S->ctx, &c->H, c->H.val, c->H.dinv, nrhs, b, x);
    return SAP_OK;
}

/* F_kj by binary search in row k (0 when absent). */
static double parilu_find(const sap_int *rp, const sap_int *ci, const double *f, sap_int k, sap_int j)
{
    sap_int lo = rp[k], hi = rp[k + 1];
    while (lo < hi) {
        const sap_int m = lo + (hi - lo) / 2;
        if (ci[m] < j) lo = m + 1;
        else hi = m;
    }
    return lo < rp[k + 1] && ci[lo] == j ? f[lo] : 0.0;
}

static sap_status cpu_parilu(sap_context *ctx, const sap_csr *S, int sweeps, double *lu)
{
    sap_status st = SAP_OK;
    const sap_int n = S->nrows, *rp = S->rowptr, *ci = S->colind;
    double *tmp = NULL, *dg = NULL;
    SAP_ALLOC(ctx, tmp, S->nnz > 0 ? S->nnz : 1);
    SAP_ALLOC(ctx, dg, n > 0 ? n : 1);
    double *cur = lu, *nxt = tmp;
    const int nt = S->nnz >= SAP_CPU_PAR_MIN ? sap__threads(ctx) : 1;
    for (int sw = 0; sw < sweeps; sw++) {
        for (sap_int i = 0; i < n; i++) dg[i] = parilu_find(rp, ci, cur, i, i);
        SAP_OMP_FOR_DYNAMIC(nt, 256)
        for (sap_int i = 0; i < n; i++)
            for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
                const sap_int j = ci[p], m = i < j ? i : j;
                double s = S->val[p];
                for (sap_int q = rp[i]; q < rp[i + 1] && ci[q] < m; q++) s -= cur[q] * parilu_find(rp, ci, cur, ci[q], j);
                nxt[p] = i > j ? (dg[j] != 0.0 ? s / dg[j] : cur[p]) : s;
            }
        double *t = cur;
        cur = nxt;
        nxt = t;
    }
    if (cur != lu) memcpy(lu, cur, sizeof(double) * (size_t)S->nnz);
cleanup:
    sap__free(ctx, tmp);
    sap__free(ctx, dg);
    return st;
}

const sap_trsv_kernels sap__cpu_trsv_kernels = {
    .name = "cpu",
    .analyze = cpu_trsv_analyze,
    .solve = cpu_trsv_solve,
    .destroy = cpu_trsv_destroy,
    .parilu = cpu_parilu,
};
