/* cpu_backend.c -- the cpu backend's kernel table (sap__backend_cpu_ops): vectors in host
 * memory, BLAS-1 (cpu_blas.c) and SpMV (cpu_spmv.c) in double and float, and the sparse
 * matrices in the four formats (built with the host conversions of formats.c). */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "device/cpu/cpu_internal.h"

#include <math.h>
#include <unistd.h>
#include <string.h>

#define ESIZE(prec) ((prec) == SAP_FLOAT ? sizeof(float) : sizeof(double))
#define IS_D(v) ((v)->prec == SAP_DOUBLE)

/* ---- argument checks ----------------------------------------------------------------- */

static sap_status check_vec(sap_context *ctx, const char *fn, const sap_vec *v)
{
    if (!v || v->n < 0 || (v->n > 0 && !v->data) || (v->prec != SAP_DOUBLE && v->prec != SAP_FLOAT))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu %s: invalid vector argument", fn);
    return SAP_OK;
}

static sap_status check2(sap_context *ctx, const char *fn, const sap_vec *x, const sap_vec *y, int same_prec)
{
    sap_status st = check_vec(ctx, fn, x);
    if (st == SAP_OK) st = check_vec(ctx, fn, y);
    if (st < 0) return st;
    if (x->n != y->n)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu %s: vector lengths differ (%lld and %lld)", fn, (long long)x->n,
                         (long long)y->n);
    if (same_prec && x->prec != y->prec)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu %s: vectors of different precisions", fn);
    return SAP_OK;
}

#define CHECK2(fn, x, y)                                                                                               \
    do {                                                                                                               \
        sap_status s__ = check2(ctx, fn, x, y, 1);                                                                     \
        if (s__ < 0) return s__;                                                                                       \
    } while (0)

/* ---- vectors --------------------------------------------------------------------------- */

static sap_status vec_create(sap_context *ctx, sap_int n, sap_precision prec, sap_vec *v)
{
    if (!v || n < 0 || (prec != SAP_DOUBLE && prec != SAP_FLOAT))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu vec_create: invalid arguments");
    v->n = n;
    v->prec = prec;
    v->data = sap__alloc(ctx, (size_t)n, ESIZE(prec), true, __FILE__, __LINE__);
    if (!v->data) {
        v->n = 0;
        return SAP_ERR_OUT_OF_MEMORY;
    }
    return SAP_OK;
}

static void vec_destroy(sap_context *ctx, sap_vec *v)
{
    if (!v) return;
    sap__free(ctx, v->data);
    v->data = NULL;
    v->n = 0;
}

static sap_status vec_upload(sap_context *ctx, sap_vec *v, const double *host)
{
    sap_status st = check_vec(ctx, "vec_upload", v);
    if (st < 0) return st;
    if (v->n > 0 && !host) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu vec_upload: host array is NULL");
    const sap_int n = v->n;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    if (IS_D(v)) {
        if (n > 0) memcpy(v->data, host, sizeof(double) * (size_t)n);
    } else {
        float *d = v->data;
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
        for (sap_int i = 0; i < n; i++) d[i] = (float)host[i];
    }
    return SAP_OK;
}

static sap_status vec_download(sap_context *ctx, const sap_vec *v, double *host)
{
    sap_status st = check_vec(ctx, "vec_download", v);
    if (st < 0) return st;
    if (v->n > 0 && !host) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu vec_download: host array is NULL");
    const sap_int n = v->n;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    if (IS_D(v)) {
        if (n > 0) memcpy(host, v->data, sizeof(double) * (size_t)n);
    } else {
        const float *d = v->data;
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
        for (sap_int i = 0; i < n; i++) host[i] = (double)d[i];
    }
    return SAP_OK;
}

static sap_status copy(sap_context *ctx, const sap_vec *x, sap_vec *y)
{
    sap_status st = check2(ctx, "copy", x, y, 0);
    if (st < 0) return st;
    const sap_int n = x->n;
    if (x->data == y->data && x->prec == y->prec) return SAP_OK;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    if (x->prec == y->prec) {
        /* memcpy by chunks, in parallel for long vectors */
        const size_t es = ESIZE(x->prec);
        const sap_int chunk = 1 << 16, nch = (n + chunk - 1) / chunk;
        char *dst = y->data;
        const char *src = x->data;
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
        for (sap_int c = 0; c < nch; c++) {
            const sap_int i0 = c * chunk, len = n - i0 < chunk ? n - i0 : chunk;
            memcpy(dst + (size_t)i0 * es, src + (size_t)i0 * es, (size_t)len * es);
        }
    } else if (IS_D(x)) {
        const double *a = x->data;
        float *b = y->data;
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
        for (sap_int i = 0; i < n; i++) b[i] = (float)a[i];
    } else {
        const float *a = x->data;
        double *b = y->data;
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 8192)")
        for (sap_int i = 0; i < n; i++) b[i] = (double)a[i];
    }
    return SAP_OK;
}

static sap_status set(sap_context *ctx, sap_vec *x, double a)
{
    sap_status st = check_vec(ctx, "set", x);
    if (st < 0) return st;
    if (IS_D(x)) sap__cpu_set_d(ctx, x->n, x->data, a);
    else sap__cpu_set_s(ctx, x->n, x->data, a);
    return SAP_OK;
}

static sap_status scale(sap_context *ctx, sap_vec *x, double a)
{
    sap_status st = check_vec(ctx, "scale", x);
    if (st < 0) return st;
    if (IS_D(x)) sap__cpu_scale_d(ctx, x->n, x->data, a);
    else sap__cpu_scale_s(ctx, x->n, x->data, a);
    return SAP_OK;
}

static sap_status axpby(sap_context *ctx, double a, const sap_vec *x, double b, sap_vec *y)
{
    CHECK2("axpby", x, y);
    if (IS_D(x)) sap__cpu_axpby_d(ctx, x->n, a, x->data, b, y->data);
    else sap__cpu_axpby_s(ctx, x->n, a, x->data, b, y->data);
    return SAP_OK;
}

static sap_status axpbypcz(sap_context *ctx, double a, const sap_vec *x, double b, const sap_vec *y, double c,
                           sap_vec *z)
{
    CHECK2("axpbypcz", x, y);
    CHECK2("axpbypcz", x, z);
    if (IS_D(x)) sap__cpu_axpbypcz_d(ctx, x->n, a, x->data, b, y->data, c, z->data);
    else sap__cpu_axpbypcz_s(ctx, x->n, a, x->data, b, y->data, c, z->data);
    return SAP_OK;
}

static sap_status pointwise_mult(sap_context *ctx, const sap_vec *x, const sap_vec *y, sap_vec *z)
{
    CHECK2("pointwise_mult", x, y);
    CHECK2("pointwise_mult", x, z);
    if (IS_D(x)) sap__cpu_pmult_d(ctx, x->n, x->data, y->data, z->data);
    else sap__cpu_pmult_s(ctx, x->n, x->data, y->data, z->data);
    return SAP_OK;
}

static sap_status check_k(sap_context *ctx, const char *fn, int k, const sap_vec *x, const sap_vec *y)
{
    if (k < 0 || k > 64 || (k > 0 && !x)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu %s: k = %d outside 0..64", fn, k);
    for (int i = 0; i < k; i++) {
        sap_status st = check2(ctx, fn, &x[i], y, 1);
        if (st < 0) return st;
    }
    return check_vec(ctx, fn, y);
}

static sap_status maxpy(sap_context *ctx, int k, const double *a, const sap_vec *x, sap_vec *y)
{
    sap_status st = check_k(ctx, "maxpy", k, x, y);
    if (st < 0) return st;
    if (k == 0) return SAP_OK;
    if (!a) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu maxpy: coefficients are NULL");
    const void *px[64];
    for (int i = 0; i < k; i++) px[i] = x[i].data;
    if (IS_D(y)) sap__cpu_maxpy_d(ctx, y->n, k, a, (const double *const *)px, y->data);
    else sap__cpu_maxpy_s(ctx, y->n, k, a, (const float *const *)px, y->data);
    return SAP_OK;
}

static sap_status mdot(sap_context *ctx, int k, const sap_vec *x, const sap_vec *y, double *r)
{
    sap_status st = check_k(ctx, "mdot", k, x, y);
    if (st < 0) return st;
    if (k == 0) return SAP_OK;
    if (!r) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu mdot: result is NULL");
    const void *px[64];
    for (int i = 0; i < k; i++) px[i] = x[i].data;
    if (IS_D(y)) sap__cpu_mdot_d(ctx, y->n, k, (const double *const *)px, y->data, r);
    else sap__cpu_mdot_s(ctx, y->n, k, (const float *const *)px, y->data, r);
    return SAP_OK;
}

static sap_status dot(sap_context *ctx, const sap_vec *x, const sap_vec *y, double *result)
{
    CHECK2("dot", x, y);
    if (!result) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu dot: result is NULL");
    const void *px[1] = {x->data};
    if (IS_D(y)) sap__cpu_mdot_d(ctx, y->n, 1, (const double *const *)px, y->data, result);
    else sap__cpu_mdot_s(ctx, y->n, 1, (const float *const *)px, y->data, result);
    return SAP_OK;
}

static sap_status nrm2(sap_context *ctx, const sap_vec *x, double *result)
{
    sap_status st = dot(ctx, x, x, result);
    if (st == SAP_OK) *result = sqrt(*result);
    return st;
}

static sap_status axpby_nrm2(sap_context *ctx, double a, const sap_vec *x, double b, sap_vec *y, double *nrm)
{
    CHECK2("axpby_nrm2", x, y);
    if (!nrm) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu axpby_nrm2: result is NULL");
    if (IS_D(x)) *nrm = sap__cpu_axpby_nrm2_d(ctx, x->n, a, x->data, b, y->data);
    else *nrm = sap__cpu_axpby_nrm2_s(ctx, x->n, a, x->data, b, y->data);
    return SAP_OK;
}

static sap_status cg_update(sap_context *ctx, double alpha, const sap_vec *p, const sap_vec *q, sap_vec *x, sap_vec *r,
                            double *rr)
{
    CHECK2("cg_update", p, q);
    CHECK2("cg_update", p, x);
    CHECK2("cg_update", p, r);
    if (!rr) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu cg_update: result is NULL");
    if (IS_D(p)) *rr = sap__cpu_cg_update_d(ctx, p->n, alpha, p->data, q->data, x->data, r->data);
    else *rr = sap__cpu_cg_update_s(ctx, p->n, alpha, p->data, q->data, x->data, r->data);
    return SAP_OK;
}

/* ---- block vectors: k columns of m entries each (column c at element c m) ----------------- */

/* k in 1..64, the lengths of X and Y k m_x and k m_y (each divisible by k), one precision;
 * *mx, *my: the column lengths. */
static sap_status check_cols(sap_context *ctx, const char *fn, int k, const sap_vec *X, const sap_vec *Y, sap_int *mx,
                             sap_int *my)
{
    if (k < 1 || k > 64) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu %s: k = %d outside 1..64", fn, k);
    sap_status st = check_vec(ctx, fn, X);
    if (st == SAP_OK) st = check_vec(ctx, fn, Y);
    if (st < 0) return st;
    if (X->prec != Y->prec) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu %s: vectors of different precisions", fn);
    if (X->n % k || Y->n % k)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu %s: vector lengths %lld, %lld not divisible by k = %d", fn,
                         (long long)X->n, (long long)Y->n, k);
    *mx = X->n / k;
    *my = Y->n / k;
    return SAP_OK;
}

/* The columns in parallel when they are short (each kernel call then runs on one thread),
 * one after the other, each on all threads, when they are long: every column is computed
 * by the one-vector kernel with its own fixed chunking either way, so the results do not
 * depend on the thread count. */
static int cols_nt(const sap_context *ctx, sap_int m, int k)
{
    return m >= SAP_CPU_PAR_MIN || (int64_t)m * k < SAP_CPU_PAR_MIN ? 1 : sap__threads(ctx);
}

static sap_status caxpby(sap_context *ctx, int k, const double *a, const sap_vec *X, const double *b, sap_vec *Y)
{
    sap_int m = 0, my = 0;
    sap_status st = check_cols(ctx, "caxpby", k, X, Y, &m, &my);
    if (st < 0) return st;
    if (m != my)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu caxpby: vector lengths differ (%lld and %lld)", (long long)X->n,
                         (long long)Y->n);
    if (!a || !b) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu caxpby: coefficients are NULL");
    const size_t es = ESIZE(X->prec);
    const int d = IS_D(X);
    const char *x = X->data;
    char *y = Y->data;
    int nt = cols_nt(ctx, m, k);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (int c = 0; c < k; c++) {
        if (a[c] == 0.0 && b[c] == 1.0) continue; /* not written */
        const size_t off = (size_t)c * (size_t)m * es;
        if (d) sap__cpu_axpby_d(ctx, m, a[c], (const double *)(x + off), b[c], (double *)(y + off));
        else sap__cpu_axpby_s(ctx, m, a[c], (const float *)(x + off), b[c], (float *)(y + off));
    }
    return SAP_OK;
}

static sap_status caxpbypcz(sap_context *ctx, int k, const double *a, const sap_vec *X, const double *b,
                            const sap_vec *Y, const double *c, sap_vec *Z)
{
    sap_int m = 0, my = 0, mz = 0;
    sap_status st = check_cols(ctx, "caxpbypcz", k, X, Y, &m, &my);
    if (st == SAP_OK) st = check_cols(ctx, "caxpbypcz", k, Y, Z, &my, &mz);
    if (st < 0) return st;
    if (m != my || m != mz)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu caxpbypcz: vector lengths differ (%lld, %lld and %lld)",
                         (long long)X->n, (long long)Y->n, (long long)Z->n);
    if (!a || !b || !c) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu caxpbypcz: coefficients are NULL");
    const size_t es = ESIZE(X->prec);
    const int d = IS_D(X);
    const char *x = X->data, *y = Y->data;
    char *z = Z->data;
    int nt = cols_nt(ctx, m, k);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (int q = 0; q < k; q++) {
        if (a[q] == 0.0 && b[q] == 0.0 && c[q] == 1.0) continue; /* not written */
        const size_t off = (size_t)q * (size_t)m * es;
        if (d)
            sap__cpu_axpbypcz_d(ctx, m, a[q], (const double *)(x + off), b[q], (const double *)(y + off), c[q],
                                (double *)(z + off));
        else
            sap__cpu_axpbypcz_s(ctx, m, a[q], (const float *)(x + off), b[q], (const float *)(y + off), c[q],
                                (float *)(z + off));
    }
    return SAP_OK;
}

static sap_status cdot(sap_context *ctx, int k, int nx, const sap_vec *X, const sap_vec *Y, double *r)
{
    if (nx < 1 || nx > 8) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu cdot: nx = %d outside 1..8", nx);
    if (!X || !r) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu cdot: NULL vectors or results");
    sap_int m = 0, my = 0;
    for (int i = 0; i < nx; i++) {
        sap_status st = check_cols(ctx, "cdot", k, &X[i], Y, &m, &my);
        if (st < 0) return st;
        if (X[i].n != Y->n)
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu cdot: vector lengths differ (%lld and %lld)",
                             (long long)X[i].n, (long long)Y->n);
    }
    const size_t es = ESIZE(Y->prec);
    const int d = IS_D(Y);
    int nt = cols_nt(ctx, m, k);
    (void)nt;
    /* column c: the mdot of its nx columns against Y_c (dot's chunking: k = 1, nx = 1 gives
     * dot's result bitwise) */
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (int c = 0; c < k; c++) {
        const size_t off = (size_t)c * (size_t)m * es;
        const void *px[8];
        double rc[8];
        for (int i = 0; i < nx; i++) px[i] = (const char *)X[i].data + off;
        const void *py = (const char *)Y->data + off;
        if (d) sap__cpu_mdot_d(ctx, m, nx, (const double *const *)px, py, rc);
        else sap__cpu_mdot_s(ctx, m, nx, (const float *const *)px, py, rc);
        for (int i = 0; i < nx; i++) r[i * k + c] = rc[i];
    }
    return SAP_OK;
}

/* spmm, row by row: the k products of a row share each matrix entry (read once); each
 * y_i of each column sums its entries in the order of spmv's kernel for that format (CSR:
 * even and odd positions in two sums; ELL, SELL-P: slot by slot, then HEC's CSR part;
 * BAND: diagonal by diagonal) in double, so spmm equals k spmv calls (alpha 1, beta 0)
 * bitwise.  Rows are handed out in blocks of SPMM_BLOCK (a multiple of the SELL-P slice). */
#define SPMM_BLOCK 256

#define SAP_CPU_SPMM(S, REAL)                                                                                          \
    static void spmm_rows_##S(const sap_spmat *M, int k, const REAL *restrict x, REAL *restrict y, sap_int r0,         \
                              sap_int r1)                                                                              \
    {                                                                                                                  \
        const sap_cpu_mat *mt = M->impl;                                                                               \
        const sap_int n = M->nrows, nc = M->ncols;                                                                     \
        double a0[64], a1[64];                                                                                         \
        for (sap_int i = r0; i < r1; i++) {                                                                            \
            for (int c = 0; c < k; c++) a0[c] = a1[c] = 0.0;                                                           \
            switch (M->format) {                                                                                       \
            case SAP_FORMAT_ELL:                                                                                       \
            case SAP_FORMAT_HEC: {                                                                                     \
                const REAL *v = mt->ell_val;                                                                           \
                for (sap_int t = 0; t < mt->width; t++) {                                                              \
                    const double vt = (double)v[i + t * n];                                                            \
                    const REAL *xj = x + mt->ell_col[i + t * n];                                                       \
                    for (int c = 0; c < k; c++) a0[c] += vt * (double)xj[(size_t)c * nc];                              \
                }                                                                                                      \
                if (M->format == SAP_FORMAT_HEC) {                                                                     \
                    const REAL *cv = mt->val;                                                                          \
                    for (sap_int p = mt->rowptr[i]; p < mt->rowptr[i + 1]; p++) {                                      \
                        const double vp = (double)cv[p];                                                               \
                        const REAL *xj = x + mt->col32[p];                                                             \
                        for (int c = 0; c < k; c++) a0[c] += vp * (double)xj[(size_t)c * nc];                          \
                    }                                                                                                  \
                }                                                                                                      \
                break;                                                                                                 \
            }                                                                                                          \
            case SAP_FORMAT_SELLP: {                                                                                   \
                const sap_int s = i / SAP_SELLP_SLICE, w = mt->slice_width[s];                                         \
                const sap_int q = mt->slice_ptr[s] + i % SAP_SELLP_SLICE;                                              \
                const REAL *v = mt->sl_val;                                                                            \
                for (sap_int t = 0; t < w; t++) {                                                                      \
                    const double vt = (double)v[q + t * SAP_SELLP_SLICE];                                              \
                    const REAL *xj = x + mt->sl_col[q + t * SAP_SELLP_SLICE];                                          \
                    for (int c = 0; c < k; c++) a0[c] += vt * (double)xj[(size_t)c * nc];                              \
                }                                                                                                      \
                break;                                                                                                 \
            }                                                                                                          \
            case SAP_FORMAT_BAND: {                                                                                    \
                const sap_int kl = mt->kl, w = mt->kl + mt->ku + 1;                                                    \
                const REAL *v = mt->band_val;                                                                          \
                const sap_int t0 = kl - i > 0 ? kl - i : 0, t1 = nc - i + kl < w ? nc - i + kl : w;                    \
                for (sap_int t = t0; t < t1; t++) {                                                                    \
                    const double vt = (double)v[(size_t)t * n + i];                                                    \
                    const REAL *xj = x + (i + t - kl);                                                                 \
                    for (int c = 0; c < k; c++) a0[c] += vt * (double)xj[(size_t)c * nc];                              \
                }                                                                                                      \
                break;                                                                                                 \
            }                                                                                                          \
            default: { /* CSR */                                                                                       \
                const REAL *v = mt->val;                                                                               \
                sap_int p = mt->rowptr[i];                                                                             \
                const sap_int e = mt->rowptr[i + 1];                                                                   \
                for (; p + 2 <= e; p += 2) {                                                                           \
                    const double v0 = (double)v[p], v1 = (double)v[p + 1];                                             \
                    const REAL *x0 = x + (mt->col32 ? mt->col32[p] : mt->col64[p]);                                    \
                    const REAL *x1 = x + (mt->col32 ? mt->col32[p + 1] : mt->col64[p + 1]);                            \
                    for (int c = 0; c < k; c++) {                                                                      \
                        a0[c] += v0 * (double)x0[(size_t)c * nc];                                                      \
                        a1[c] += v1 * (double)x1[(size_t)c * nc];                                                      \
                    }                                                                                                  \
                }                                                                                                      \
                if (p < e) {                                                                                           \
                    const double v0 = (double)v[p];                                                                    \
                    const REAL *x0 = x + (mt->col32 ? mt->col32[p] : mt->col64[p]);                                    \
                    for (int c = 0; c < k; c++) a0[c] += v0 * (double)x0[(size_t)c * nc];                              \
                }                                                                                                      \
                break;                                                                                                 \
            }                                                                                                          \
            }                                                                                                          \
            for (int c = 0; c < k; c++) y[(size_t)c * n + i] = (REAL)(a0[c] + a1[c]);                                  \
        }                                                                                                              \
    }

SAP_CPU_SPMM(d, double)
SAP_CPU_SPMM(s, float)
#undef SAP_CPU_SPMM

static sap_status spmm(sap_context *ctx, const sap_spmat *M, int k, const sap_vec *X, sap_vec *Y)
{
    if (!M || !M->impl) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu spmm: NULL matrix");
    sap_int mx = 0, my = 0;
    sap_status st = check_cols(ctx, "spmm", k, X, Y, &mx, &my);
    if (st < 0) return st;
    if (mx != M->ncols || my != M->nrows || X->prec != M->prec)
        return SAP_ERROR(ctx, SAP_ERR_INVALID,
                         "cpu spmm: vectors (%lld, %lld) are not %d columns of the %lld x %lld matrix in its precision",
                         (long long)X->n, (long long)Y->n, k, (long long)M->nrows, (long long)M->ncols);
    const sap_int n = M->nrows;
    if (n == 0) return SAP_OK;
    double work = (double)(M->nnz + n);
    if (M->format != SAP_FORMAT_CSR) work += (double)n * (double)M->ell_width; /* padded slots */
    int nt = work * k < 2.0 * SAP_CPU_PAR_MIN ? 1 : sap__threads(ctx);
    (void)nt;
    const sap_int nb = (n + SPMM_BLOCK - 1) / SPMM_BLOCK;
    const int d = M->prec == SAP_DOUBLE;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (sap_int b = 0; b < nb; b++) {
        const sap_int r0 = b * SPMM_BLOCK, r1 = r0 + SPMM_BLOCK < n ? r0 + SPMM_BLOCK : n;
        if (d) spmm_rows_d(M, k, X->data, Y->data, r0, r1);
        else spmm_rows_s(M, k, X->data, Y->data, r0, r1);
    }
    return SAP_OK;
}

static sap_status synchronize(sap_context *ctx)
{
    (void)ctx;
    return SAP_OK;
}

/* ---- sparse matrices ---------------------------------------------------------------------- */

static void mat_free(sap_context *ctx, sap_cpu_mat *m)
{
    if (!m) return;
    sap__free(ctx, m->rowptr);
    sap__free(ctx, m->col32);
    sap__free(ctx, m->col64);
    sap__free(ctx, m->val);
    sap__free(ctx, m->ell_col);
    sap__free(ctx, m->ell_val);
    sap__free(ctx, m->slice_ptr);
    sap__free(ctx, m->slice_width);
    sap__free(ctx, m->sl_col);
    sap__free(ctx, m->sl_val);
    sap__free(ctx, m->band_val);
    sap__free(ctx, m);
}

static void spmat_destroy(sap_context *ctx, sap_spmat *M)
{
    if (!M) return;
    mat_free(ctx, M->impl);
    sap__free(ctx, M);
}

/* Moves a double array into the matrix in its precision (converting to float). */
static sap_status take_values(sap_context *ctx, double **src, sap_int count, sap_precision prec, void **dst)
{
    if (prec == SAP_DOUBLE) {
        *dst = *src;
        *src = NULL;
        return SAP_OK;
    }
    float *f = sap__alloc(ctx, (size_t)count, sizeof(float), false, __FILE__, __LINE__);
    if (!f) return SAP_ERR_OUT_OF_MEMORY;
    for (sap_int i = 0; i < count; i++) f[i] = (float)(*src)[i];
    sap__free(ctx, *src);
    *src = NULL;
    *dst = f;
    return SAP_OK;
}

/* Writes v[i] into a value array of the matrix' precision. */
static inline void put_value(void *arr, sap_precision prec, sap_int q, double v)
{
    if (prec == SAP_DOUBLE) ((double *)arr)[q] = v;
    else ((float *)arr)[q] = (float)v;
}

static sap_status spmat_create(sap_context *ctx, const sap_csr *A, sap_spmv_format fmt, sap_precision prec,
                               sap_spmat **out)
{
    if (!A || !out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu spmat_create: NULL argument");
    *out = NULL;
    if (prec != SAP_DOUBLE && prec != SAP_FLOAT)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu spmat_create: unknown precision %d", (int)prec);
    if (fmt < SAP_FORMAT_AUTO || fmt > SAP_FORMAT_BAND)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu spmat_create: unknown format %d", (int)fmt);
    sap_status st = SAP_OK;
    sap_spmat *M = NULL;
    sap_cpu_mat *m = NULL;
    sap_ell_host E;
    sap_sellp_host S;
    sap_hec_host H;
    memset(&E, 0, sizeof(E));
    memset(&S, 0, sizeof(S));
    memset(&H, 0, sizeof(H));
    const sap_int n = A->nrows, nnz = A->nnz;
    SAP_CALLOC(ctx, M, 1);
    SAP_CALLOC(ctx, m, 1);
    M->impl = m;
    M->nrows = n;
    M->ncols = A->ncols;
    M->nnz = nnz;
    M->prec = prec;
    M->format = fmt;
    M->reason = "requested";
    if (fmt == SAP_FORMAT_AUTO) {
        M->format = SAP_FORMAT_CSR;
        M->reason = "cpu backend: row-parallel CSR moves the fewest bytes on a CPU (the padded formats help GPUs)";
    }
    switch (M->format) {
    case SAP_FORMAT_ELL:
        SAP_TRY(sap__ell_from_csr(ctx, A, -1, &E));
        m->width = M->ell_width = E.width;
        m->ell_col = E.col;
        E.col = NULL;
        SAP_TRY(take_values(ctx, &E.val, n * E.width, prec, &m->ell_val));
        break;
    case SAP_FORMAT_SELLP:
        SAP_TRY(sap__sellp_from_csr(ctx, A, &S));
        m->nslices = S.nslices;
        m->slice_ptr = S.slice_ptr;
        m->slice_width = S.slice_width;
        m->sl_col = S.col;
        S.slice_ptr = S.slice_width = NULL;
        S.col = NULL;
        for (sap_int s = 0; s < m->nslices; s++)
            if (m->slice_width[s] > M->ell_width) M->ell_width = m->slice_width[s];
        SAP_TRY(take_values(ctx, &S.val, m->slice_ptr[m->nslices], prec, &m->sl_val));
        break;
    case SAP_FORMAT_HEC:
        SAP_TRY(sap__hec_from_csr(ctx, A, &H));
        m->width = M->ell_width = H.ell.width;
        m->ell_col = H.ell.col;
        H.ell.col = NULL;
        SAP_TRY(take_values(ctx, &H.ell.val, n * H.ell.width, prec, &m->ell_val));
        m->rowptr = H.csr_rowptr;
        m->col32 = H.csr_col;
        H.csr_rowptr = NULL;
        H.csr_col = NULL;
        SAP_TRY(take_values(ctx, &H.csr_val, m->rowptr[n], prec, &m->val));
        break;
    case SAP_FORMAT_BAND: {
        int64_t slots = 0;
        SAP_TRY(sap__band_dims(ctx, A, &m->kl, &m->ku, &slots));
        m->band_val = sap__alloc(ctx, (size_t)(slots > 0 ? slots : 1), ESIZE(prec), false, __FILE__, __LINE__);
        if (!m->band_val)
            SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "out of memory for the band (%lld slots, %lld bytes)", (long long)slots,
                     (long long)slots * (long long)ESIZE(prec));
        sap__band_fill_values(ctx, A, m->kl, m->ku, prec, m->band_val);
        M->ell_width = m->kl + m->ku + 1;
        break;
    }
    default: /* CSR */
        SAP_ALLOC(ctx, m->rowptr, n + 1);
        memcpy(m->rowptr, A->rowptr, sizeof(sap_int) * (size_t)(n + 1));
        if (A->ncols <= INT32_MAX) { /* (on all threads, which also first touch the pages) */
            SAP_ALLOC(ctx, m->col32, nnz);
            const int64_t bad = sap__conv_colind32(ctx, A->colind, A->ncols, 0, nnz, m->col32);
            if (bad >= 0)
                SAP_FAIL(ctx, SAP_ERR_INDEX, "cpu spmat_create: column index %lld at position %lld outside 0..%lld",
                         (long long)A->colind[bad], (long long)bad, (long long)A->ncols - 1);
        } else {
            SAP_ALLOC(ctx, m->col64, nnz);
            memcpy(m->col64, A->colind, sizeof(sap_int) * (size_t)nnz);
        }
        m->val = sap__alloc(ctx, (size_t)nnz, ESIZE(prec), false, __FILE__, __LINE__);
        if (!m->val && nnz > 0)
            SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "out of memory for the CSR values (%lld bytes)",
                     (long long)nnz * (long long)ESIZE(prec));
        sap__conv_values(ctx, A->val, prec, 0, nnz, m->val);
        break;
    }
    *out = M;
    M = NULL;
cleanup:
    sap__ell_free(ctx, &E);
    sap__sellp_free(ctx, &S);
    sap__hec_free(ctx, &H);
    spmat_destroy(ctx, M);
    return st;
}

static sap_status spmat_update_values(sap_context *ctx, sap_spmat *M, const sap_csr *A)
{
    if (!M || !A || !M->impl) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu spmat_update_values: NULL argument");
    if (A->nrows != M->nrows || A->ncols != M->ncols || A->nnz != M->nnz)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu spmat_update_values: the pattern changed (%lld x %lld, nnz %lld)",
                         (long long)A->nrows, (long long)A->ncols, (long long)A->nnz);
    sap_cpu_mat *m = M->impl;
    const sap_int n = M->nrows;
    const sap_precision prec = M->prec;
    if (M->format == SAP_FORMAT_BAND) {
        sap__band_fill_values(ctx, A, m->kl, m->ku, prec, m->band_val);
        return SAP_OK;
    }
    if (M->format == SAP_FORMAT_CSR) { /* the same positions: on all threads */
        sap__conv_values(ctx, A->val, prec, 0, A->nnz, m->val);
        return SAP_OK;
    }
    for (sap_int i = 0; i < n; i++) {
        const sap_int p0 = A->rowptr[i], len = A->rowptr[i + 1] - p0;
        for (sap_int k = 0; k < len; k++) {
            const double v = A->val[p0 + k];
            switch (M->format) {
            case SAP_FORMAT_ELL: put_value(m->ell_val, prec, i + k * n, v); break;
            case SAP_FORMAT_SELLP: {
                const sap_int s = i / SAP_SELLP_SLICE, r = i % SAP_SELLP_SLICE;
                put_value(m->sl_val, prec, m->slice_ptr[s] + r + k * SAP_SELLP_SLICE, v);
                break;
            }
            case SAP_FORMAT_HEC:
                if (k < m->width) put_value(m->ell_val, prec, i + k * n, v);
                else put_value(m->val, prec, m->rowptr[i] + k - m->width, v);
                break;
            default: break; /* CSR and BAND: above */
            }
        }
    }
    return SAP_OK;
}

static sap_status spmv(sap_context *ctx, const sap_spmat *M, double alpha, const sap_vec *x, double beta, sap_vec *y)
{
    if (!M || !M->impl) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu spmv: NULL matrix");
    sap_status st = check_vec(ctx, "spmv", x);
    if (st == SAP_OK) st = check_vec(ctx, "spmv", y);
    if (st < 0) return st;
    if (x->n != M->ncols || y->n != M->nrows || x->prec != M->prec || y->prec != M->prec)
        return SAP_ERROR(ctx, SAP_ERR_INVALID,
                         "cpu spmv: vectors (%lld, %lld) do not match the %lld x %lld matrix or its precision",
                         (long long)x->n, (long long)y->n, (long long)M->nrows, (long long)M->ncols);
    if (M->prec == SAP_DOUBLE) sap__cpu_spmv_d(ctx, M, alpha, x->data, beta, y->data);
    else sap__cpu_spmv_s(ctx, M, alpha, x->data, beta, y->data);
    return SAP_OK;
}

static sap_status spmat_band(const sap_spmat *M, const void **val, sap_int *kl, sap_int *w)
{
    if (!M || !M->impl || M->format != SAP_FORMAT_BAND) return SAP_ERR_INVALID;
    const sap_cpu_mat *m = M->impl;
    *val = m->band_val;
    *kl = m->kl;
    *w = m->kl + m->ku + 1;
    return SAP_OK;
}

static sap_status cpu_mem_alloc(sap_context *ctx, size_t bytes, void **p)
{
    *p = sap__alloc(ctx, bytes, 1, false, __FILE__, __LINE__);
    return *p || bytes == 0 ? SAP_OK : sap__alloc_failure(bytes, 1);
}
static void cpu_mem_free(sap_context *ctx, void *p) { sap__free(ctx, p); }
static sap_status cpu_mem_upload(sap_context *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes) memcpy(dst, src, bytes);
    return SAP_OK;
}
/* Host memory: what this process can get (base/hostmem.c), total = physical memory. */
static sap_status cpu_mem_info(sap_context *ctx, size_t *free_bytes, size_t *total_bytes)
{
    (void)ctx;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
    *total_bytes = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : 0;
    const double avail = sap__host_mem_available(NULL);
    *free_bytes = avail >= 0 ? (size_t)avail : *total_bytes;
    return *total_bytes ? SAP_OK : SAP_ERR_UNSUPPORTED;
}

static int cpu_units(const sap_context *ctx) { return sap__threads(ctx); }

/* ---- the device-pointer entry points: host memory is the cpu's backend memory ---------- */

static sap_status cpu_ptr_check(sap_context *ctx, const void *p, const char *what)
{
    (void)p;
    return SAP_ERROR(ctx, SAP_ERR_INVALID,
                     "%s: the cpu backend has no device memory (a device-pointer entry point needs a cuda context)",
                     what ? what : "pointer");
}

static sap_status cpu_mem_copy(sap_context *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes && dst != src) memmove(dst, src, bytes);
    return SAP_OK;
}

static sap_status cpu_gather(sap_context *ctx, const sap_vec *x, const sap_int *p, const double *s, sap_vec *y)
{
    sap_status st = check2(ctx, "gather", x, y, 1);
    if (st < 0) return st;
    if (!IS_D(x) || x->data == y->data)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu gather: x and y must be distinct double vectors");
    const double *xd = x->data;
    double *yd = y->data;
    const sap_int n = x->n;
    int nt = sap__cpu_nt(ctx, n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (sap_int i = 0; i < n; i++) yd[i] = (s ? s[i] : 1.0) * xd[p ? p[i] : i];
    return SAP_OK;
}

/* A CSR view of the pattern of A with the values val. */
static sap_csr csr_view(const sap_csr *A, const sap_int *rowptr, const sap_int *colind, const double *val)
{
    sap_csr V = *A;
    V.rowptr = (sap_int *)(uintptr_t)rowptr;
    V.colind = (sap_int *)(uintptr_t)colind;
    V.val = (double *)(uintptr_t)val;
    return V;
}

static sap_status cpu_spmat_create_dev(sap_context *ctx, const sap_csr *A, const sap_int *rowptr,
                                       const sap_int *colind, const double *val, sap_spmat **M)
{
    if (!A || !rowptr || (A->nnz > 0 && (!colind || !val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu spmat_create_dev: NULL argument");
    sap_csr V = csr_view(A, rowptr, colind, val);
    return spmat_create(ctx, &V, SAP_FORMAT_CSR, SAP_DOUBLE, M);
}

static sap_status cpu_spmat_values_dev(sap_context *ctx, sap_spmat *M, const sap_csr *A, const double *val)
{
    if (!A || (A->nnz > 0 && !val)) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu spmat_values_dev: NULL argument");
    if (M && M->impl && M->format == SAP_FORMAT_CSR && M->prec == SAP_DOUBLE && A->nnz == M->nnz) {
        /* the values in CSR order as they are (A may be a shape without host arrays) */
        if (M->nnz > 0) sap__par_memcpy(ctx, ((sap_cpu_mat *)M->impl)->val, val, sizeof(double) * (size_t)M->nnz);
        return SAP_OK;
    }
    if (!A->rowptr) return SAP_ERROR(ctx, SAP_ERR_INVALID, "cpu spmat_values_dev: no pattern");
    sap_csr V = csr_view(A, A->rowptr, A->colind, val);
    return spmat_update_values(ctx, M, &V);
}

static const sap_backend_ops cpu_ops = {
    .name = "cpu",
    .vec_create = vec_create,
    .vec_destroy = vec_destroy,
    .vec_upload = vec_upload,
    .vec_download = vec_download,
    .copy = copy,
    .set = set,
    .scale = scale,
    .axpby = axpby,
    .axpbypcz = axpbypcz,
    .pointwise_mult = pointwise_mult,
    .maxpy = maxpy,
    .dot = dot,
    .mdot = mdot,
    .nrm2 = nrm2,
    .axpby_nrm2 = axpby_nrm2,
    .cg_update = cg_update,
    .caxpby = caxpby,
    .caxpbypcz = caxpbypcz,
    .cdot = cdot,
    .spmm = spmm,
    .spmat_create = spmat_create,
    .spmat_update_values = spmat_update_values,
    .spmat_destroy = spmat_destroy,
    .spmat_band = spmat_band,
    .spmv = spmv,
    .synchronize = synchronize,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_upload = cpu_mem_upload,
    .mem_info = cpu_mem_info,
    .units = cpu_units,
    .band = &sap__cpu_band_kernels,
    .trsv = &sap__cpu_trsv_kernels,
    .direct = &sap__cpu_direct_kernels,
    .bjacobi = &sap__cpu_bjacobi_kernels,
    .block_relax = sap__cpu_block_relax,
    .dense = &sap__cpu_dense_kernels,
    .ptr_check = cpu_ptr_check,
    .mem_download = cpu_mem_copy,
    .mem_copy = cpu_mem_copy,
    .gather = cpu_gather,
    .spmat_create_dev = cpu_spmat_create_dev,
    .spmat_values_dev = cpu_spmat_values_dev,
    .csr_stats = sap__cpu_csr_stats,
};

const sap_backend_ops *sap__backend_cpu_ops(void) { return &cpu_ops; }
