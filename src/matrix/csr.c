/* csr.c -- compressed sparse row matrices: create, copy, canonical form from COO or
 * user arrays (through sap__csr_canonicalize, sort_pairs.c), invariant check, and the
 * dense type. */
#include "base/base.h"
#include "matrix/sort_pairs.h"

#include <string.h>

sap_status sap_csr_create(sap_context *ctx, sap_int nrows, sap_int ncols, sap_int nnz, sap_csr **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *out = NULL;
    if (nrows < 0 || ncols < 0 || nnz < 0)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "negative size (%lld x %lld, nnz %lld)", (long long)nrows,
                         (long long)ncols, (long long)nnz);
    if (nrows == INT64_MAX)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "%lld rows are too many", (long long)nrows);
    if (nnz > SAP_NNZ_MAX)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "%lld entries are too many (sizes overflow)", (long long)nnz);
    sap_status st = sap__mem_check(ctx, "a CSR matrix", 8.0 * ((double)nrows + 1.0) + 16.0 * (double)nnz);
    if (st < 0) return st;
    sap_csr *A = NULL;
    SAP_CALLOC(ctx, A, 1);
    A->ctx = ctx;
    A->nrows = nrows;
    A->ncols = ncols;
    A->nnz = nnz;
    SAP_CALLOC(ctx, A->rowptr, nrows + 1);
    SAP_ALLOC(ctx, A->colind, nnz);
    SAP_ALLOC(ctx, A->val, nnz);
    *out = A;
    return SAP_OK;
cleanup:
    sap_csr_destroy(A);
    return st;
}

void sap_csr_destroy(sap_csr *A)
{
    if (!A) return;
    sap_context *ctx = A->ctx;
    sap__free(ctx, A->rowptr);
    sap__free(ctx, A->colind);
    sap__free(ctx, A->val);
    sap__free(ctx, A);
}

sap_status sap_csr_copy(const sap_csr *A, sap_csr **B)
{
    if (!A || !B) return SAP_ERR_INVALID;
    sap_status st = sap_csr_create(A->ctx, A->nrows, A->ncols, A->nnz, B);
    if (st < 0) return st;
    memcpy((*B)->rowptr, A->rowptr, sizeof(sap_int) * (size_t)(A->nrows + 1));
    memcpy((*B)->colind, A->colind, sizeof(sap_int) * (size_t)A->nnz);
    memcpy((*B)->val, A->val, sizeof(double) * (size_t)A->nnz);
    return SAP_OK;
}

/* Builds a canonical CSR from nnz triplets (row[k], col[k], val[k]) already known to be in
 * range: a stable bucket pass by row keeps each row's entries in input order, then
 * sap__csr_canonicalize sorts the rows and sums duplicates.  val may be NULL (ones). */
static sap_status csr_from_triplets(sap_context *ctx, sap_int nrows, sap_int ncols, sap_int nnz, const sap_int *row,
                                    const sap_int *col, const double *val, sap_csr **out)
{
    sap_status st = SAP_OK;
    sap_int *next = NULL;
    sap_csr *A = NULL;
    SAP_TRY(sap_csr_create(ctx, nrows, ncols, nnz, &A));
    for (sap_int k = 0; k < nnz; k++) A->rowptr[row[k] + 1]++;
    for (sap_int i = 0; i < nrows; i++) A->rowptr[i + 1] += A->rowptr[i];
    SAP_ALLOC(ctx, next, nrows + 1);
    memcpy(next, A->rowptr, sizeof(sap_int) * (size_t)(nrows + 1));
    for (sap_int k = 0; k < nnz; k++) {
        sap_int p = next[row[k]]++;
        A->colind[p] = col[k];
        A->val[p] = val ? val[k] : 1.0;
    }
    SAP_TRY(sap__csr_canonicalize(ctx, A));
    *out = A;
    A = NULL;
cleanup:
    sap_csr_destroy(A);
    sap__free(ctx, next);
    return st;
}

sap_status sap_csr_from_coo(const sap_coo *C, sap_csr **out)
{
    if (!C || !out) return SAP_ERR_INVALID;
    sap_context *ctx = C->ctx;
    *out = NULL;
    for (sap_int k = 0; k < C->nnz; k++) {
        if (C->row[k] < 0 || C->row[k] >= C->nrows || C->col[k] < 0 || C->col[k] >= C->ncols)
            return SAP_ERROR(ctx, SAP_ERR_INDEX, "COO entry %lld at (%lld, %lld) outside a %lld x %lld matrix",
                             (long long)k, (long long)C->row[k], (long long)C->col[k], (long long)C->nrows,
                             (long long)C->ncols);
    }
    return csr_from_triplets(ctx, C->nrows, C->ncols, C->nnz, C->row, C->col, C->val, out);
}

sap_status sap_csr_from_arrays(sap_context *ctx, sap_int nrows, sap_int ncols, const sap_int *rowptr,
                               const sap_int *colind, const double *val, sap_csr **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *out = NULL;
    if (nrows < 0 || ncols < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "negative matrix size");
    if (!rowptr) return SAP_ERROR(ctx, SAP_ERR_INVALID, "rowptr is NULL");
    if (rowptr[0] != 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "rowptr[0] = %lld, expected 0", (long long)rowptr[0]);
    for (sap_int i = 0; i < nrows; i++)
        if (rowptr[i + 1] < rowptr[i])
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "rowptr decreases at row %lld", (long long)i);
    sap_int nnz = rowptr[nrows];
    if (nnz > 0 && !colind) return SAP_ERROR(ctx, SAP_ERR_INVALID, "colind is NULL");
    for (sap_int i = 0; i < nrows; i++)
        for (sap_int p = rowptr[i]; p < rowptr[i + 1]; p++)
            if (colind[p] < 0 || colind[p] >= ncols)
                return SAP_ERROR(ctx, SAP_ERR_INDEX, "row %lld has column index %lld outside 0..%lld", (long long)i,
                                 (long long)colind[p], (long long)ncols - 1);
    sap_csr *A = NULL;
    sap_status st = sap_csr_create(ctx, nrows, ncols, nnz, &A);
    if (st < 0) return st;
    memcpy(A->rowptr, rowptr, sizeof(sap_int) * (size_t)(nrows + 1));
    if (nnz > 0) memcpy(A->colind, colind, sizeof(sap_int) * (size_t)nnz);
    for (sap_int p = 0; p < nnz; p++) A->val[p] = val ? val[p] : 1.0;
    st = sap__csr_canonicalize(ctx, A);
    if (st < 0) {
        sap_csr_destroy(A);
        return st;
    }
    *out = A;
    return SAP_OK;
}

sap_status sap__csr_check_rowptr(const sap_csr *A)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (A->nrows < 0 || A->ncols < 0 || A->nnz < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "negative CSR size");
    if (!A->rowptr) return SAP_ERROR(ctx, SAP_ERR_INVALID, "CSR rowptr is NULL");
    if (A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "CSR rowptr ends (%lld, %lld) do not match nnz %lld",
                         (long long)A->rowptr[0], (long long)A->rowptr[A->nrows], (long long)A->nnz);
    if (A->nnz > 0 && (!A->colind || !A->val))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "CSR colind or val is NULL with nnz %lld", (long long)A->nnz);
    /* the whole rowptr first: a bad entry must not send the column scan out of bounds */
    for (sap_int i = 0; i < A->nrows; i++)
        if (A->rowptr[i + 1] < A->rowptr[i])
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "CSR rowptr decreases at row %lld", (long long)i);
    return SAP_OK;
}

sap_status sap_csr_check(const sap_csr *A)
{
    sap_status st = sap__csr_check_rowptr(A);
    if (st < 0) return st;
    sap_context *ctx = A->ctx;
    /* the first bad row, found in parallel on large matrices; then its message */
    sap_int bad = A->nrows;
    const int nt = sap__threads_for(ctx, (double)(A->nnz + A->nrows));
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(min : bad)")
    for (sap_int i = 0; i < A->nrows; i++) {
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const sap_int j = A->colind[p];
            if (j < 0 || j >= A->ncols || (p > A->rowptr[i] && A->colind[p - 1] >= j)) {
                if (i < bad) bad = i;
                break;
            }
        }
    }
    for (sap_int i = bad; i < A->nrows; i++) {
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p];
            if (j < 0 || j >= A->ncols)
                return SAP_ERROR(ctx, SAP_ERR_INDEX, "CSR row %lld: column %lld out of range", (long long)i,
                                 (long long)j);
            if (p > A->rowptr[i] && A->colind[p - 1] >= j)
                return SAP_ERROR(ctx, SAP_ERR_INVALID, "CSR row %lld: columns not strictly increasing at %lld",
                                 (long long)i, (long long)j);
        }
    }
    return SAP_OK;
}

sap_status sap_csr_to_coo(const sap_csr *A, sap_coo **out)
{
    if (!A || !out) return SAP_ERR_INVALID;
    sap_status st = sap_coo_create(A->ctx, A->nrows, A->ncols, A->nnz, out);
    if (st < 0) return st;
    sap_coo *C = *out;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            C->row[p] = i;
            C->col[p] = A->colind[p];
            C->val[p] = A->val[p];
        }
    C->nnz = A->nnz;
    return SAP_OK;
}

sap_status sap_dense_create(sap_context *ctx, sap_int nrows, sap_int ncols, sap_dense **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *out = NULL;
    if (nrows < 0 || ncols < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "negative dense size");
    if (sap__mul_overflows(nrows, ncols, INT64_MAX / 8))
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "dense %lld x %lld matrix is too large", (long long)nrows,
                         (long long)ncols);
    sap_status st = SAP_OK;
    sap_dense *D = NULL;
    SAP_CALLOC(ctx, D, 1);
    D->ctx = ctx;
    D->nrows = nrows;
    D->ncols = ncols;
    D->ld = nrows;
    SAP_CALLOC(ctx, D->val, nrows * ncols);
    *out = D;
    return SAP_OK;
cleanup:
    sap_dense_destroy(D);
    return st;
}

void sap_dense_destroy(sap_dense *D)
{
    if (!D) return;
    sap__free(D->ctx, D->val);
    sap__free(D->ctx, D);
}

sap_status sap_csr_to_dense(const sap_csr *A, sap_dense **out)
{
    if (!A || !out) return SAP_ERR_INVALID;
    sap_status st = sap_dense_create(A->ctx, A->nrows, A->ncols, out);
    if (st < 0) return st;
    sap_dense *D = *out;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) D->val[i + A->colind[p] * D->ld] += A->val[p];
    return SAP_OK;
}

sap_status sap_csr_from_dense(const sap_dense *D, double drop_tol, sap_csr **out)
{
    if (!D || !out) return SAP_ERR_INVALID;
    sap_context *ctx = D->ctx;
    *out = NULL;
    sap_int nnz = 0;
    for (sap_int j = 0; j < D->ncols; j++)
        for (sap_int i = 0; i < D->nrows; i++)
            if (drop_tol < 0 || !(__builtin_fabs(D->val[i + j * D->ld]) <= drop_tol)) nnz++; /* NaN kept */
    sap_status st = sap_csr_create(ctx, D->nrows, D->ncols, nnz, out);
    if (st < 0) return st;
    sap_csr *A = *out;
    sap_int w = 0;
    for (sap_int i = 0; i < D->nrows; i++) {
        for (sap_int j = 0; j < D->ncols; j++) {
            double v = D->val[i + j * D->ld];
            if (drop_tol < 0 || !(__builtin_fabs(v) <= drop_tol)) {
                A->colind[w] = j;
                A->val[w] = v;
                w++;
            }
        }
        A->rowptr[i + 1] = w;
    }
    return SAP_OK;
}
