/* csr_search.h -- binary search in the sorted rows of a canonical CSR (raw arrays: the
 * matrix layer's sap_csr and the backends' CSR in backend memory alike). */
#ifndef SAP_CSR_SEARCH_H
#define SAP_CSR_SEARCH_H

#include "base/base.h"

/* First position p in [lo, hi) with colind[p] >= j (hi if none); colind sorted there. */
static inline sap_int sap__lower_bound(const sap_int *colind, sap_int lo, sap_int hi, sap_int j)
{
    while (lo < hi) {
        sap_int mid = lo + (hi - lo) / 2;
        if (colind[mid] < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Position of entry (i, j) in a canonical CSR (rowptr, colind), or -1 when not stored. */
static inline sap_int sap__csr_find(const sap_int *rowptr, const sap_int *colind, sap_int i, sap_int j)
{
    sap_int p = sap__lower_bound(colind, rowptr[i], rowptr[i + 1], j);
    return p < rowptr[i + 1] && colind[p] == j ? p : -1;
}

/* 1 when a_ij == a_ji for every entry of row i (a missing mirror counts 0; NaN never
 * matches): the per-row test of numerical symmetry. */
static inline int sap__csr_row_symmetric(const sap_int *rowptr, const sap_int *colind, const double *val, sap_int i)
{
    for (sap_int p = rowptr[i]; p < rowptr[i + 1]; p++) {
        const sap_int j = colind[p];
        if (j == i) continue;
        const sap_int q = sap__csr_find(rowptr, colind, j, i);
        if (!(val[p] == (q < 0 ? 0.0 : val[q]))) return 0;
    }
    return 1;
}

#endif /* SAP_CSR_SEARCH_H */
