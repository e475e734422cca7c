/* sort_pairs.h -- the canonical form of CSR rows (src/matrix/sort_pairs.c; the in-place
 * sap__sort_pairs of distinct columns is declared in base/base.h). */
#ifndef SAP_SORT_PAIRS_H
#define SAP_SORT_PAIRS_H

#include "base/base.h"

/* Makes A canonical in place: sorts the rows that are not sorted (stably) and sums
 * duplicate columns in the order they are stored; rowptr and nnz are updated (the
 * colind and val arrays keep their size).  Sorted rows cost one pass.  Scratch: two
 * arrays of the longest unsorted row, only for rows longer than 32. */
sap_status sap__csr_canonicalize(sap_context *ctx, sap_csr *A);

#endif /* SAP_SORT_PAIRS_H */
