/* csr_norm.c -- matrix norms.  Results do not depend on the thread count: maxima are
 * order-independent, row sums run sequentially within a row, the Frobenius sum is taken
 * over a fixed blocking of the rows (SAP_NORM_CHUNKS blocks, combined in order) and the
 * column sums of the 1-norm are accumulated sequentially.  A NaN entry makes the norm
 * NaN. */
#include "base/base.h"

#include <float.h>
#include <math.h>
#define SAP_NORM_CHUNKS 256

/* max that propagates NaN whatever the order of its arguments */
static inline double nan_max(double a, double b) { return (a > b || isnan(a)) ? a : b; }

static int threads_for(const sap_csr *A)
{
    return sap__threads_for(A->ctx, (double)(A->rowptr[A->nrows] + A->nrows));
}

static double norm_max(const sap_csr *A)
{
    const sap_int nnz = A->rowptr[A->nrows];
    const double *ax = A->val;
    double res = 0.0;
    int nt = threads_for(A);
    (void)nt;
    int any_nan = 0;
    SAP_OMP("omp parallel num_threads(nt)")
    {
        double loc = 0.0;
        int nan = 0;
        SAP_OMP("omp for schedule(static) nowait")
        for (sap_int p = 0; p < nnz; p++) { /* branch-free, vectorizable */
            double v = fabs(ax[p]);
            loc = v > loc ? v : loc;
            nan |= v != v;
        }
        SAP_OMP("omp critical(sap_norm_combine)")
        {
            res = nan_max(res, loc);
            any_nan |= nan;
        }
    }
    return any_nan ? NAN : res;
}

static double norm_inf(const sap_csr *A)
{
    const sap_int n = A->nrows, *ap = A->rowptr;
    const double *ax = A->val;
    double res = 0.0;
    int nt = threads_for(A);
    (void)nt;
    SAP_OMP("omp parallel num_threads(nt)")
    {
        double loc = 0.0;
        SAP_OMP("omp for schedule(dynamic, 1024) nowait")
        for (sap_int i = 0; i < n; i++) {
            double s = 0.0;
            for (sap_int p = ap[i]; p < ap[i + 1]; p++) s += fabs(ax[p]);
            loc = nan_max(loc, s);
        }
        SAP_OMP("omp critical(sap_norm_combine)")
        res = nan_max(res, loc);
    }
    return res;
}

/* sum over entries of (a / scale)^2 in fixed row blocks, combined in block order */
static double sum_squares(const sap_csr *A, double scale)
{
    const sap_int n = A->nrows, *ap = A->rowptr, work = ap[n] + n;
    const double *ax = A->val;
    double part[SAP_NORM_CHUNKS];
    int nt = threads_for(A);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (int c = 0; c < SAP_NORM_CHUNKS; c++) {
        sap_int r0 = sap__split_rows(ap, n, work / SAP_NORM_CHUNKS * c + work % SAP_NORM_CHUNKS * c / SAP_NORM_CHUNKS);
        sap_int r1 = c + 1 == SAP_NORM_CHUNKS
                         ? n
                         : sap__split_rows(ap, n,
                                     work / SAP_NORM_CHUNKS * (c + 1) + work % SAP_NORM_CHUNKS * (c + 1) / SAP_NORM_CHUNKS);
        double s = 0.0;
        if (scale == 1.0) {
            for (sap_int p = ap[r0]; p < ap[r1]; p++) s += ax[p] * ax[p];
        } else {
            for (sap_int p = ap[r0]; p < ap[r1]; p++) {
                double t = ax[p] / scale;
                s += t * t;
            }
        }
        part[c] = s;
    }
    double sum = 0.0;
    for (int c = 0; c < SAP_NORM_CHUNKS; c++) sum += part[c];
    return sum;
}

static double norm_fro(const sap_csr *A)
{
    double s = sum_squares(A, 1.0);
    if (isfinite(s) && s >= DBL_MIN / DBL_EPSILON) return sqrt(s);
    /* zero, overflow, underflow or a NaN/Inf entry: scale by the largest magnitude */
    double mx = norm_max(A);
    if (!isfinite(mx) || mx == 0.0) return mx;
    return mx * sqrt(sum_squares(A, mx));
}

static sap_status norm_one(const sap_csr *A, double *out)
{
    sap_context *ctx = A->ctx;
    const sap_int n = A->nrows, m = A->ncols, *ap = A->rowptr, *ai = A->colind;
    const double *ax = A->val;
    sap_status st = SAP_OK;
    double *colsum = NULL;
    SAP_CALLOC(ctx, colsum, m);
    for (sap_int p = 0; p < ap[n]; p++) colsum[ai[p]] += fabs(ax[p]);
    double res = 0.0;
    for (sap_int j = 0; j < m; j++) res = nan_max(res, colsum[j]);
    *out = res;
cleanup:
    sap__free(ctx, colsum);
    return st;
}

sap_status sap_csr_norm(const sap_csr *A, sap_norm_type type, double *norm)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (!norm) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_norm: norm is NULL");
    if (A->nrows < 0 || A->ncols < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_norm: malformed CSR argument");
    switch (type) {
    case SAP_NORM_ONE: return norm_one(A, norm);
    case SAP_NORM_INF: *norm = norm_inf(A); return SAP_OK;
    case SAP_NORM_FRO: *norm = norm_fro(A); return SAP_OK;
    case SAP_NORM_MAX: *norm = norm_max(A); return SAP_OK;
    }
    return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_norm: unknown norm type %d", (int)type);
}
