/* csr_symmetric.c -- full matrix from one stored triangle, and alpha*A + beta*A^T.
 * Both are a row-by-row merge of A with its transpose: O(nnz + n), rows in parallel. */
#include "base/base.h"

#include <string.h>

/* Rows with fewer nonzeros than this per thread are not worth a parallel region. */
/* B = alpha*A + beta*S over the union pattern, A and S square n x n canonical CSR.
 * skip_s_diag drops the diagonal entries of S.  An entry present in only one operand
 * gets alpha*a (or beta*s); present in both, alpha*a + beta*s. */
static sap_status merge_add(sap_context *ctx, const sap_csr *A, double alpha, const sap_csr *S, double beta,
                            int skip_s_diag, sap_csr **out)
{
    const sap_int n = A->nrows;
    const sap_int *ap = A->rowptr, *ai = A->colind, *sp = S->rowptr, *si = S->colind;
    const double *ax = A->val, *sx = S->val;
    sap_status st = SAP_OK;
    sap_csr *B = NULL;
    SAP_TRY(sap_csr_create(ctx, n, n, 0, &B));
    sap_int *bp = B->rowptr;
    int nt = sap__threads_for(ctx, (double)(ap[n] + sp[n]));
    (void)nt;

    /* pass 1: size of the union of each row */
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1024)")
    for (sap_int i = 0; i < n; i++) {
        sap_int pa = ap[i], ea = ap[i + 1], ps = sp[i], es = sp[i + 1], c = 0;
        while (pa < ea || ps < es) {
            if (ps < es && skip_s_diag && si[ps] == i) {
                ps++;
                continue;
            }
            if (ps >= es || (pa < ea && ai[pa] < si[ps])) pa++;
            else if (pa >= ea || si[ps] < ai[pa]) ps++;
            else pa++, ps++;
            c++;
        }
        bp[i + 1] = c;
    }
    for (sap_int i = 0; i < n; i++) bp[i + 1] += bp[i];
    const sap_int nnz = bp[n];
    SAP_FREE(ctx, B->colind);
    SAP_FREE(ctx, B->val);
    SAP_ALLOC(ctx, B->colind, nnz);
    SAP_ALLOC(ctx, B->val, nnz);
    B->nnz = nnz;
    sap_int *bi = B->colind;
    double *bx = B->val;

    /* pass 2: merge */
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1024)")
    for (sap_int i = 0; i < n; i++) {
        sap_int pa = ap[i], ea = ap[i + 1], ps = sp[i], es = sp[i + 1], w = bp[i];
        while (pa < ea || ps < es) {
            if (ps < es && skip_s_diag && si[ps] == i) {
                ps++;
                continue;
            }
            if (ps >= es || (pa < ea && ai[pa] < si[ps])) {
                bi[w] = ai[pa];
                bx[w] = alpha * ax[pa];
                pa++;
            } else if (pa >= ea || si[ps] < ai[pa]) {
                bi[w] = si[ps];
                bx[w] = beta * sx[ps];
                ps++;
            } else {
                bi[w] = ai[pa];
                bx[w] = alpha * ax[pa] + beta * sx[ps];
                pa++, ps++;
            }
            w++;
        }
    }
    *out = B;
    return SAP_OK;
cleanup:
    sap_csr_destroy(B);
    return st;
}

static sap_status check_square_arg(const sap_csr *A, const char *fn)
{
    sap_context *ctx = A->ctx;
    if (A->nrows < 0 || A->ncols < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: malformed CSR argument", fn);
    if (A->nrows != A->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "%s: matrix is %lld x %lld, must be square", fn,
                         (long long)A->nrows, (long long)A->ncols);
    return SAP_OK;
}

sap_status sap_csr_symmetric_expand(const sap_csr *T, sap_symmetry symmetry, sap_csr **out)
{
    if (!T) return SAP_ERR_INVALID;
    sap_context *ctx = T->ctx;
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_symmetric_expand: output pointer is NULL");
    *out = NULL;
    if (symmetry != SAP_GENERAL && symmetry != SAP_SYMMETRIC && symmetry != SAP_SKEW_SYMMETRIC)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_symmetric_expand: unknown symmetry %d", (int)symmetry);
    sap_status st = check_square_arg(T, "sap_csr_symmetric_expand");
    if (st < 0) return st;
    if (symmetry == SAP_GENERAL) return sap_csr_copy(T, out);

    const sap_int n = T->nrows;
    if (symmetry == SAP_SKEW_SYMMETRIC) {
        /* the first row with a nonzero diagonal entry, if any */
        const sap_int *tp = T->rowptr, *ti = T->colind;
        const double *tx = T->val;
        sap_int bad = n;
        int nt = sap__threads_for(ctx, (double)(tp[n] + n));
        (void)nt;
        SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(min : bad)")
        for (sap_int i = 0; i < n; i++)
            for (sap_int p = tp[i]; p < tp[i + 1]; p++)
                if (ti[p] == i && tx[p] != 0.0 && i < bad) bad = i;
        if (bad < n) {
            double v = 0.0;
            for (sap_int p = tp[bad]; p < tp[bad + 1]; p++)
                if (ti[p] == bad) v = tx[p];
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "skew-symmetric matrix has a nonzero diagonal entry a(%lld,%lld) = %g",
                             (long long)bad, (long long)bad, v);
        }
    }
    sap_csr *TT = NULL;
    SAP_TRY(sap_csr_transpose(T, &TT));
    SAP_TRY(merge_add(ctx, T, 1.0, TT, symmetry == SAP_SKEW_SYMMETRIC ? -1.0 : 1.0, 1, out));
cleanup:
    sap_csr_destroy(TT);
    return st;
}

sap_status sap_csr_add_transpose(const sap_csr *A, double alpha, double beta, sap_csr **out)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_add_transpose: output pointer is NULL");
    *out = NULL;
    sap_status st = check_square_arg(A, "sap_csr_add_transpose");
    if (st < 0) return st;
    sap_csr *AT = NULL;
    SAP_TRY(sap_csr_transpose(A, &AT));
    SAP_TRY(merge_add(ctx, A, alpha, AT, beta, 0, out));
cleanup:
    sap_csr_destroy(AT);
    return st;
}
