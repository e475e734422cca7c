/* csr_split.c -- splitting CSR rows into ranges of about equal work for threads, and the
 * lower / upper bandwidth from the row extents. */
#include "base/base.h"

sap_int sap__split_rows(const sap_int *rowptr, sap_int n, sap_int target)
{
    sap_int lo = 0, hi = n;
    while (lo < hi) {
        sap_int mid = lo + (hi - lo) / 2;
        if (rowptr[mid] + mid < target) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void sap__csr_lower_upper(const sap_csr *A, int nt, sap_int *kl_out, sap_int *ku_out)
{
    sap_int kl = 0, ku = 0;
    nt = sap__threads_cap(nt, (double)(A->nnz + A->nrows));
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(max : kl, ku)")
    for (sap_int i = 0; i < A->nrows; i++) {
        const sap_int p0 = A->rowptr[i], p1 = A->rowptr[i + 1];
        if (p0 == p1) continue;
        if (i - A->colind[p0] > kl) kl = i - A->colind[p0];
        if (A->colind[p1 - 1] - i > ku) ku = A->colind[p1 - 1] - i;
    }
    *kl_out = kl;
    *ku_out = ku;
}
