/* cpu_spmv_t.h -- template: y = alpha A x + beta y on the cpu backend for one precision,
 * in the five formats (CSR, ELL, SELL-P, HEC, BAND).  cpu_spmv.c includes it with S = d,
 * REAL = double and S = s, REAL = float.  Products are accumulated in double and every
 * y_i is computed by one thread in a fixed order, so the result does not depend on the
 * thread count.  beta = 0 means y is not read. */

#include "device/cpu/cpu_template.h"

static inline void FN(store)(REAL *y, sap_int i, double s, double alpha, double beta)
{
    y[i] = beta == 0.0 ? (REAL)(alpha * s) : (REAL)(alpha * s + beta * (double)y[i]);
}

/* CSR rows r0..r1-1 with 32- or 64-bit column indices. */
#define SAP_CSR_ROWS(IDX)                                                                                              \
    for (sap_int i = r0; i < r1; i++) {                                                                                \
        double s0 = 0.0, s1 = 0.0;                                                                                     \
        sap_int p = rowptr[i];                                                                                         \
        const sap_int e = rowptr[i + 1];                                                                               \
        for (; p + 2 <= e; p += 2) {                                                                                   \
            s0 += (double)val[p] * (double)x[IDX[p]];                                                                  \
            s1 += (double)val[p + 1] * (double)x[IDX[p + 1]];                                                          \
        }                                                                                                              \
        if (p < e) s0 += (double)val[p] * (double)x[IDX[p]];                                                           \
        FN(store)(y, i, s0 + s1, alpha, beta);                                                                         \
    }

static void FN(csr_rows)(const sap_cpu_mat *m, sap_int r0, sap_int r1, double alpha, const REAL *restrict x,
                         double beta, REAL *restrict y)
{
    const sap_int *rowptr = m->rowptr;
    const REAL *val = m->val;
    if (m->col32) {
        const int32_t *col = m->col32;
        SAP_CSR_ROWS(col)
    } else {
        const sap_int *col = m->col64;
        SAP_CSR_ROWS(col)
    }
}

/* CSR: blocks of SAP_CSR_BLOCK rows handed out dynamically (a thread that is descheduled
 * on a busy machine does not hold up the others for long). */
#define SAP_CSR_BLOCK 1024

static void FN(spmv_csr)(sap_context *ctx, const sap_spmat *M, double alpha, const REAL *x, double beta, REAL *y)
{
    const sap_cpu_mat *m = M->impl;
    const sap_int n = M->nrows, work = M->nnz + n;
    int nt = sap__threads(ctx);
    if (work < 2 * SAP_CPU_PAR_MIN) nt = 1;
    if (nt == 1) {
        FN(csr_rows)(m, 0, n, alpha, x, beta, y);
        return;
    }
    const sap_int nb = (n + SAP_CSR_BLOCK - 1) / SAP_CSR_BLOCK;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (sap_int b = 0; b < nb; b++) {
        const sap_int r0 = b * SAP_CSR_BLOCK, r1 = r0 + SAP_CSR_BLOCK < n ? r0 + SAP_CSR_BLOCK : n;
        FN(csr_rows)(m, r0, r1, alpha, x, beta, y);
    }
}

#define SAP_ELL_BLOCK 64

/* ELL rows (and the CSR part of HEC when hec != 0), in blocks of SAP_ELL_BLOCK rows. */
static void FN(spmv_ell)(sap_context *ctx, const sap_spmat *M, int hec, double alpha, const REAL *restrict x,
                         double beta, REAL *restrict y)
{
    const sap_cpu_mat *m = M->impl;
    const sap_int n = M->nrows, w = m->width;
    const int32_t *col = m->ell_col;
    const REAL *val = m->ell_val;
    const sap_int nb = (n + SAP_ELL_BLOCK - 1) / SAP_ELL_BLOCK;
    int nt = sap__threads(ctx);
    if (n * (w + 1) < 2 * SAP_CPU_PAR_MIN) nt = 1;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 16)")
    for (sap_int b = 0; b < nb; b++) {
        double acc[SAP_ELL_BLOCK];
        const sap_int i0 = b * SAP_ELL_BLOCK, i1 = i0 + SAP_ELL_BLOCK < n ? i0 + SAP_ELL_BLOCK : n;
        const sap_int len = i1 - i0;
        for (sap_int i = 0; i < len; i++) acc[i] = 0.0;
        for (sap_int k = 0; k < w; k++) {
            const int32_t *ck = col + k * n + i0;
            const REAL *vk = val + k * n + i0;
            for (sap_int i = 0; i < len; i++) acc[i] += (double)vk[i] * (double)x[ck[i]];
        }
        if (hec) {
            const sap_int *rp = m->rowptr;
            const int32_t *cc = m->col32;
            const REAL *cv = m->val;
            for (sap_int i = 0; i < len; i++)
                for (sap_int p = rp[i0 + i]; p < rp[i0 + i + 1]; p++) acc[i] += (double)cv[p] * (double)x[cc[p]];
        }
        for (sap_int i = 0; i < len; i++) FN(store)(y, i0 + i, acc[i], alpha, beta);
    }
}

static void FN(spmv_sellp)(sap_context *ctx, const sap_spmat *M, double alpha, const REAL *restrict x, double beta,
                           REAL *restrict y)
{
    const sap_cpu_mat *m = M->impl;
    const sap_int n = M->nrows, ns = m->nslices;
    const int32_t *col = m->sl_col;
    const REAL *val = m->sl_val;
    int nt = sap__threads(ctx);
    if (M->nnz + n < 2 * SAP_CPU_PAR_MIN) nt = 1;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 32)")
    for (sap_int s = 0; s < ns; s++) {
        double acc[SAP_SELLP_SLICE];
        const sap_int base = m->slice_ptr[s], w = m->slice_width[s];
        for (int r = 0; r < SAP_SELLP_SLICE; r++) acc[r] = 0.0;
        for (sap_int k = 0; k < w; k++) {
            const int32_t *ck = col + base + k * SAP_SELLP_SLICE;
            const REAL *vk = val + base + k * SAP_SELLP_SLICE;
            for (int r = 0; r < SAP_SELLP_SLICE; r++) acc[r] += (double)vk[r] * (double)x[ck[r]];
        }
        const sap_int i0 = s * SAP_SELLP_SLICE;
        const sap_int len = n - i0 < SAP_SELLP_SLICE ? n - i0 : SAP_SELLP_SLICE;
        for (sap_int r = 0; r < len; r++) FN(store)(y, i0 + r, acc[r], alpha, beta);
    }
}

/* BAND: blocks of SAP_ELL_BLOCK rows, diagonal by diagonal (contiguous values and x);
 * each y_i sums its diagonals in a fixed order. */
static void FN(spmv_band)(sap_context *ctx, const sap_spmat *M, double alpha, const REAL *restrict x, double beta,
                          REAL *restrict y)
{
    const sap_cpu_mat *m = M->impl;
    const sap_int n = M->nrows, nc = M->ncols, kl = m->kl, w = m->kl + m->ku + 1;
    const REAL *val = m->band_val;
    const sap_int nb = (n + SAP_ELL_BLOCK - 1) / SAP_ELL_BLOCK;
    int nt = sap__threads(ctx);
    if (n * w < 2 * SAP_CPU_PAR_MIN) nt = 1;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (sap_int b = 0; b < nb; b++) {
        double acc[SAP_ELL_BLOCK];
        const sap_int i0 = b * SAP_ELL_BLOCK, i1 = i0 + SAP_ELL_BLOCK < n ? i0 + SAP_ELL_BLOCK : n;
        for (sap_int i = 0; i < i1 - i0; i++) acc[i] = 0.0;
        for (sap_int t = 0; t < w; t++) {
            const sap_int off = t - kl; /* column j = i + off */
            const sap_int lo = i0 > -off ? i0 : -off, hi = i1 < nc - off ? i1 : nc - off;
            const REAL *vt = val + (size_t)t * n;
            for (sap_int i = lo; i < hi; i++) acc[i - i0] += (double)vt[i] * (double)x[i + off];
        }
        for (sap_int i = i0; i < i1; i++) FN(store)(y, i, acc[i - i0], alpha, beta);
    }
}

void FN(sap__cpu_spmv)(sap_context *ctx, const sap_spmat *M, double alpha, const REAL *x, double beta, REAL *y)
{
    if (M->nrows == 0) return;
    if (alpha == 0.0 || M->ncols == 0) {
        if (beta == 0.0) FN(sap__cpu_set)(ctx, M->nrows, y, 0.0);
        else FN(sap__cpu_scale)(ctx, M->nrows, y, beta);
        return;
    }
    switch (M->format) {
    case SAP_FORMAT_ELL: FN(spmv_ell)(ctx, M, 0, alpha, x, beta, y); break;
    case SAP_FORMAT_HEC: FN(spmv_ell)(ctx, M, 1, alpha, x, beta, y); break;
    case SAP_FORMAT_SELLP: FN(spmv_sellp)(ctx, M, alpha, x, beta, y); break;
    case SAP_FORMAT_BAND: FN(spmv_band)(ctx, M, alpha, x, beta, y); break;
    default: FN(spmv_csr)(ctx, M, alpha, x, beta, y); break;
    }
}

#include "device/cpu/cpu_template_end.h"
