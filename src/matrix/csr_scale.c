/* csr_scale.c -- A = diag(r) * A * diag(c) in place (rows in parallel). */
#include "base/base.h"

sap_status sap_csr_scale(sap_csr *A, const double *r, const double *c)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (A->nrows < 0 || A->ncols < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_scale: malformed CSR argument");
    if (!r && !c) return SAP_OK;
    const sap_int n = A->nrows, nnz = A->rowptr[n];
    const sap_int *ap = A->rowptr, *ai = A->colind;
    double *ax = A->val;
    int nt = sap__threads_for(ctx, (double)(nnz + n));
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1024)")
    for (sap_int i = 0; i < n; i++) {
        if (r && c) {
            double ri = r[i];
            for (sap_int p = ap[i]; p < ap[i + 1]; p++) ax[p] = ri * ax[p] * c[ai[p]];
        } else if (r) {
            double ri = r[i];
            for (sap_int p = ap[i]; p < ap[i + 1]; p++) ax[p] = ri * ax[p];
        } else {
            for (sap_int p = ap[i]; p < ap[i + 1]; p++) ax[p] = ax[p] * c[ai[p]];
        }
    }
    return SAP_OK;
}
