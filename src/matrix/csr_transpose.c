/* csr_transpose.c -- AT = A^T by counting sort: O(nnz + nrows + ncols).
 * Serial: count columns, prefix sum, scatter rows in increasing order (so each row of
 * AT comes out sorted).  Parallel: each thread takes a contiguous block of rows (balanced
 * by nnz) and its own column counts; a column's entries from block t go after those of
 * blocks < t, so the rows of AT are still sorted.  The canonical transpose is unique, so
 * the result is the same for any thread count. */
#include "base/base.h"

static void transpose_serial(const sap_csr *A, sap_csr *T)
{
    const sap_int n = A->nrows, m = A->ncols, nnz = A->rowptr[n];
    const sap_int *ap = A->rowptr, *ai = A->colind;
    const double *ax = A->val;
    sap_int *tp = T->rowptr, *ti = T->colind;
    double *tx = T->val;
    /* counts of column j in tp[j + 1], then the start of each row of T in tp[j] */
    for (sap_int p = 0; p < nnz; p++) tp[ai[p] + 1]++;
    for (sap_int j = 0; j < m; j++) tp[j + 1] += tp[j];
    /* scatter: tp[j] advances to the end of row j of T, i.e. the start of row j + 1 */
    for (sap_int i = 0; i < n; i++) {
        for (sap_int p = ap[i]; p < ap[i + 1]; p++) {
            sap_int q = tp[ai[p]]++;
            ti[q] = i;
            tx[q] = ax[p];
        }
    }
    for (sap_int j = m; j > 0; j--) tp[j] = tp[j - 1];
    tp[0] = 0;
}

void sap__par_col_offsets(sap_int *cnt, int nb, sap_int m, sap_int *tp)
{
    /* column totals, then the offset of each block inside its column */
    SAP_OMP("omp for schedule(static)")
    for (sap_int j = 0; j < m; j++) {
        sap_int s = 0;
        for (int b = 0; b < nb; b++) s += cnt[(size_t)b * (size_t)m + (size_t)j];
        tp[j + 1] = s;
    }
    SAP_OMP("omp single")
    for (sap_int j = 0; j < m; j++) tp[j + 1] += tp[j];
    /* implicit barrier after single */
    SAP_OMP("omp for schedule(static)")
    for (sap_int j = 0; j < m; j++) {
        sap_int s = tp[j];
        for (int b = 0; b < nb; b++) {
            sap_int *cb = cnt + (size_t)b * (size_t)m + (size_t)j;
            sap_int k = *cb;
            *cb = s;
            s += k;
        }
    }
    /* implicit barrier after for */
}

/* cnt: nt * m zeroed counters (thread t's block at cnt + t * m); the team may be smaller
 * than nt, its size is the number of blocks. */
static void transpose_parallel(const sap_csr *A, sap_csr *T, int nt, sap_int *cnt)
{
    const sap_int n = A->nrows, m = A->ncols, nnz = A->rowptr[n], work = nnz + n;
    const sap_int *ap = A->rowptr, *ai = A->colind;
    const double *ax = A->val;
    sap_int *tp = T->rowptr, *ti = T->colind;
    double *tx = T->val;
    SAP_OMP("omp parallel num_threads(nt)")
    {
        int t, nb; /* this thread's block, number of blocks = threads in the team */
        sap__omp_team(&t, &nb);
        sap_int r0 = sap__split_rows(ap, n, work * t / nb);
        sap_int r1 = t + 1 == nb ? n : sap__split_rows(ap, n, work * (t + 1) / nb);
        sap_int *c = cnt + (size_t)t * (size_t)m;
        for (sap_int p = ap[r0]; p < ap[r1]; p++) c[ai[p]]++;
        SAP_OMP("omp barrier")
        sap__par_col_offsets(cnt, nb, m, tp);
        for (sap_int i = r0; i < r1; i++) {
            for (sap_int p = ap[i]; p < ap[i + 1]; p++) {
                sap_int q = c[ai[p]]++;
                ti[q] = i;
                tx[q] = ax[p];
            }
        }
    }
}

sap_status sap_csr_transpose(const sap_csr *A, sap_csr **out)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_transpose: output pointer is NULL");
    *out = NULL;
    if (A->nrows < 0 || A->ncols < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_transpose: malformed CSR argument");

    const sap_int n = A->nrows, m = A->ncols, nnz = A->rowptr[n];
    sap_status st = SAP_OK;
    sap_csr *T = NULL;
    sap_int *cnt = NULL;
    SAP_TRY(sap_csr_create(ctx, m, n, nnz, &T));

    /* threads: enough work each, and per-thread counters no larger than the matrix */
    sap_int nt = sap__threads(ctx);
    if ((nnz + n) / nt < SAP_PAR_MIN_WORK) nt = (nnz + n) / SAP_PAR_MIN_WORK;
    if (nt > nnz / (m + 1)) nt = nnz / (m + 1);
    if (nt >= 2) {
        SAP_CALLOC(ctx, cnt, (size_t)nt * (size_t)m);
        transpose_parallel(A, T, (int)nt, cnt);
    } else {
        transpose_serial(A, T);
    }
    *out = T;
    T = NULL;
cleanup:
    sap_csr_destroy(T);
    sap__free(ctx, cnt);
    return st;
}
