/* csr_split.c -- splitting CSR rows into ranges of about equal work for threads. */
#include "sap_internal.h"

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
