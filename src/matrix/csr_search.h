/* csr_search.h -- binary search in the sorted rows of a canonical CSR (matrix-internal). */
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

#endif /* SAP_CSR_SEARCH_H */
