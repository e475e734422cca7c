/* transversal.c -- maximum transversal (zero-free diagonal): a maximum-cardinality
 * matching of the row/column bipartite graph by depth-first augmenting paths with a
 * lookahead (the MC21 scheme of Duff), iterative so deep paths cannot overflow a stack.
 *
 * For each unmatched row a search walks row -> column -> the row matched to that column
 * ... until it reaches a row having an unmatched column among its entries.  Before
 * descending from a row the lookahead scans that row for a free column: each row keeps
 * a cursor that only moves forward, because a column once matched stays matched, so the
 * lookahead costs O(nnz) over the whole run.  Columns visited by one search are stamped
 * with its root so no search enters a column twice.  Worst case O(n nnz), linear in
 * practice. */
#include "reorder/reorder_internal.h"

#include <string.h>

sap_status sap__max_matching(const sap_csr *A, sap_int *match_row, sap_int *match_col, sap_int *size)
{
    sap_context *ctx = A->ctx;
    const sap_int n = A->nrows;
    const sap_int *rp = A->rowptr, *ci = A->colind;
    const double *val = A->val;
    sap_status st = SAP_OK;
    sap_int *look = NULL, *visited = NULL, *stk = NULL, *cur = NULL, *via = NULL;
    SAP_ALLOC(ctx, look, n);
    SAP_ALLOC(ctx, visited, n);
    SAP_ALLOC(ctx, stk, n);
    SAP_ALLOC(ctx, cur, n);
    SAP_ALLOC(ctx, via, n);
    for (sap_int i = 0; i < n; i++) {
        look[i] = rp[i];
        visited[i] = -1;
    }
    sap_int count = 0;
    for (sap_int i = 0; i < n; i++) count += match_row[i] >= 0;

    for (sap_int root = 0; root < n; root++) {
        if (match_row[root] >= 0) continue;
        sap_int top = 0, found = -1;
        stk[0] = root;
        cur[0] = rp[root];
        while (top >= 0) {
            sap_int i = stk[top], end = rp[i + 1];
            /* lookahead: a free column in row i ends the search */
            sap_int p = look[i];
            while (p < end && (val[p] == 0.0 || match_col[ci[p]] >= 0)) p++;
            look[i] = p;
            if (p < end) {
                found = ci[p];
                break;
            }
            /* descend through the next unvisited column of row i */
            p = cur[top];
            while (p < end && (val[p] == 0.0 || visited[ci[p]] == root)) p++;
            if (p < end) {
                sap_int j = ci[p];
                visited[j] = root;
                cur[top] = p + 1;
                via[top] = j;
                top++;
                stk[top] = match_col[j];
                cur[top] = rp[stk[top]];
            } else {
                top--;
            }
        }
        if (found < 0) continue;
        /* augment: the deepest row takes the free column, each row above takes the column
         * that led to the row below it */
        sap_int j = found;
        for (sap_int k = top; k >= 0; k--) {
            sap_int i = stk[k];
            match_row[i] = j;
            match_col[j] = i;
            if (k > 0) j = via[k - 1];
        }
        count++;
    }
    *size = count;
cleanup:
    sap__free(ctx, look);
    sap__free(ctx, visited);
    sap__free(ctx, stk);
    sap__free(ctx, cur);
    sap__free(ctx, via);
    return st;
}

sap_status sap_max_transversal(const sap_csr *A, sap_int *rowperm, sap_int *matched)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (A->nrows != A->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "maximum transversal of a %lld x %lld matrix",
                         (long long)A->nrows, (long long)A->ncols);
    if (!rowperm && A->nrows > 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "rowperm is NULL");
    const sap_int n = A->nrows;
    sap_status st = SAP_OK;
    sap_int *mr = NULL, *mc = NULL, size = 0;
    SAP_ALLOC(ctx, mr, n);
    SAP_ALLOC(ctx, mc, n);
    for (sap_int i = 0; i < n; i++) mr[i] = mc[i] = -1;
    SAP_TRY(sap__max_matching(A, mr, mc, &size));
    if (matched) *matched = size;
    if (size < n)
        SAP_FAIL(ctx, SAP_ERR_STRUCTURALLY_SINGULAR,
                 "matrix is structurally singular: structural rank %lld of %lld (maximum transversal)",
                 (long long)size, (long long)n);
    if (n > 0) memcpy(rowperm, mc, sizeof(sap_int) * (size_t)n);
cleanup:
    sap__free(ctx, mr);
    sap__free(ctx, mc);
    return st;
}
