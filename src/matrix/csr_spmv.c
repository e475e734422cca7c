/* csr_spmv.c -- y = alpha*A*x + beta*y on the host.  Threads get contiguous row ranges
 * balanced by nnz + rows; every y_i is computed by one thread in the same order, so the
 * result does not depend on the thread count. */
#include "base/base.h"

#include <string.h>
static void spmv_rows(const sap_csr *A, sap_int r0, sap_int r1, double alpha, const double *x, double beta,
                      double *y)
{
    const sap_int *ap = A->rowptr, *ai = A->colind;
    const double *ax = A->val;
    for (sap_int i = r0; i < r1; i++) {
        double s = 0.0;
        for (sap_int p = ap[i]; p < ap[i + 1]; p++) s += ax[p] * x[ai[p]];
        y[i] = beta == 0.0 ? alpha * s : alpha * s + beta * y[i];
    }
}

sap_status sap_csr_spmv(const sap_csr *A, double alpha, const double *x, double beta, double *y)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (A->nrows < 0 || A->ncols < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_spmv: malformed CSR argument");
    const sap_int n = A->nrows, nnz = A->rowptr[n];
    if (n > 0 && !y) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_spmv: y is NULL");
    if (A->ncols > 0 && !x && alpha != 0.0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_spmv: x is NULL");
    if (n == 0) return SAP_OK;
    int nt = sap__threads_for(ctx, (double)(nnz + n));
    (void)nt;
    if (alpha == 0.0) {
        /* y = beta*y without reading A or x */
        SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
        for (sap_int i = 0; i < n; i++) y[i] = beta == 0.0 ? 0.0 : beta * y[i];
        return SAP_OK;
    }
    if (nt == 1) {
        spmv_rows(A, 0, n, alpha, x, beta, y);
        return SAP_OK;
    }
    const sap_int work = nnz + n;
    SAP_OMP("omp parallel num_threads(nt)")
    {
        int t = 0, T = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        T = omp_get_num_threads();
#endif
        sap_int r0 = sap__split_rows(A->rowptr, n, work * t / T);
        sap_int r1 = t + 1 == T ? n : sap__split_rows(A->rowptr, n, work * (t + 1) / T);
        spmv_rows(A, r0, r1, alpha, x, beta, y);
    }
    return SAP_OK;
}
