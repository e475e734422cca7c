/* csr_permute.c -- B = A(p, q), permutation checks and inverses.
 * Rows of B are copied in parallel; after a column permutation each row is re-sorted
 * in place (insertion sort for short rows, introsort for long ones). */
#include "base/base.h"

/* ---- permutations --------------------------------------------------------------------- */

/* SAP_ERR_INVALID unless p[0..n) holds each of 0..n-1 once; messages name 'name[k]'. */
static sap_status perm_validate(sap_context *ctx, sap_int n, const sap_int *p, const char *name)
{
    if (n < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "permutation %s has negative length %lld", name, (long long)n);
    if (n > 0 && !p) return SAP_ERROR(ctx, SAP_ERR_INVALID, "permutation %s is NULL", name);
    sap_status st = SAP_OK;
    unsigned char *seen = NULL;
    SAP_CALLOC(ctx, seen, n);
    for (sap_int k = 0; k < n; k++) {
        sap_int v = p[k];
        if (v < 0 || v >= n)
            SAP_FAIL(ctx, SAP_ERR_INVALID, "invalid permutation: %s[%lld] = %lld is outside 0..%lld", name,
                     (long long)k, (long long)v, (long long)n - 1);
        if (seen[v]) {
            sap_int k0 = 0;
            while (p[k0] != v) k0++;
            SAP_FAIL(ctx, SAP_ERR_INVALID, "invalid permutation: %s[%lld] = %lld repeats %s[%lld]", name,
                     (long long)k, (long long)v, name, (long long)k0);
        }
        seen[v] = 1;
    }
cleanup:
    sap__free(ctx, seen);
    return st;
}

sap_status sap_perm_check(sap_context *ctx, sap_int n, const sap_int *p)
{
    SAP_CHECK_CTX(ctx);
    return perm_validate(ctx, n, p, "p");
}

sap_status sap_perm_invert(sap_context *ctx, sap_int n, const sap_int *p, sap_int *pinv)
{
    SAP_CHECK_CTX(ctx);
    sap_status st = perm_validate(ctx, n, p, "p");
    if (st < 0) return st;
    if (n > 0 && !pinv) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_perm_invert: pinv is NULL");
    if (n > 0 && pinv == p) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_perm_invert: pinv must not alias p");
    int nt = sap__threads(ctx);
    if (n / nt < SAP_PAR_MIN_WORK) nt = 1;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (sap_int i = 0; i < n; i++) pinv[p[i]] = i;
    return SAP_OK;
}

/* ---- B = A(p, q) ------------------------------------------------------------------------ */

sap_status sap_csr_permute(const sap_csr *A, const sap_int *p, const sap_int *q, sap_csr **out)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_permute: output pointer is NULL");
    *out = NULL;
    if (A->nrows < 0 || A->ncols < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_permute: malformed CSR argument");
    const sap_int n = A->nrows, m = A->ncols, nnz = A->rowptr[n];
    sap_status st = SAP_OK;
    sap_int *qinv = NULL;
    sap_csr *B = NULL;
    if (p) SAP_TRY(perm_validate(ctx, n, p, "p"));
    if (q) {
        SAP_TRY(perm_validate(ctx, m, q, "q"));
        SAP_ALLOC(ctx, qinv, m);
        for (sap_int j = 0; j < m; j++) qinv[q[j]] = j;
    }
    SAP_TRY(sap_csr_create(ctx, n, m, nnz, &B));

    const sap_int *ap = A->rowptr, *ai = A->colind;
    const double *ax = A->val;
    sap_int *bp = B->rowptr, *bi = B->colind;
    double *bx = B->val;
    for (sap_int i = 0; i < n; i++) {
        sap_int r = p ? p[i] : i;
        bp[i + 1] = bp[i] + (ap[r + 1] - ap[r]);
    }
    int nt = sap__threads(ctx);
    if ((nnz + n) / nt < SAP_PAR_MIN_WORK) nt = 1;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 512)")
    for (sap_int i = 0; i < n; i++) {
        sap_int r = p ? p[i] : i;
        sap_int src = ap[r], len = ap[r + 1] - src, dst = bp[i];
        if (qinv) {
            for (sap_int k = 0; k < len; k++) {
                bi[dst + k] = qinv[ai[src + k]];
                bx[dst + k] = ax[src + k];
            }
            sap__sort_pairs(bi + dst, bx + dst, len);
        } else {
            for (sap_int k = 0; k < len; k++) {
                bi[dst + k] = ai[src + k];
                bx[dst + k] = ax[src + k];
            }
        }
    }
    *out = B;
    B = NULL;
cleanup:
    sap_csr_destroy(B);
    sap__free(ctx, qinv);
    return st;
}
