/* coo.c -- coordinate (triplet) matrices: create, destroy, append. */
#include "base/base.h"

#include <string.h>

sap_status sap_coo_create(sap_context *ctx, sap_int nrows, sap_int ncols, sap_int capacity, sap_coo **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *out = NULL;
    if (nrows < 0 || ncols < 0 || capacity < 0)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "negative size (%lld x %lld, capacity %lld)", (long long)nrows,
                         (long long)ncols, (long long)capacity);
    sap_status st = SAP_OK;
    sap_coo *A = NULL;
    SAP_CALLOC(ctx, A, 1);
    A->ctx = ctx;
    A->nrows = nrows;
    A->ncols = ncols;
    A->capacity = capacity;
    SAP_ALLOC(ctx, A->row, capacity);
    SAP_ALLOC(ctx, A->col, capacity);
    SAP_ALLOC(ctx, A->val, capacity);
    *out = A;
    return SAP_OK;
cleanup:
    sap_coo_destroy(A);
    return st;
}

void sap_coo_destroy(sap_coo *A)
{
    if (!A) return;
    sap_context *ctx = A->ctx;
    sap__free(ctx, A->row);
    sap__free(ctx, A->col);
    sap__free(ctx, A->val);
    sap__free(ctx, A);
}

/* Grows capacity to at least 'need' entries (geometric growth). */
static sap_status coo_reserve(sap_coo *A, sap_int need)
{
    if (need <= A->capacity) return SAP_OK;
    sap_context *ctx = A->ctx;
    sap_int cap = A->capacity < 16 ? 16 : A->capacity;
    while (cap < need) cap = cap + cap / 2;
    sap_int *r = sap__realloc(ctx, A->row, (size_t)cap, sizeof(sap_int), __FILE__, __LINE__);
    if (!r) return SAP_ERR_OUT_OF_MEMORY;
    A->row = r;
    sap_int *c = sap__realloc(ctx, A->col, (size_t)cap, sizeof(sap_int), __FILE__, __LINE__);
    if (!c) return SAP_ERR_OUT_OF_MEMORY;
    A->col = c;
    double *v = sap__realloc(ctx, A->val, (size_t)cap, sizeof(double), __FILE__, __LINE__);
    if (!v) return SAP_ERR_OUT_OF_MEMORY;
    A->val = v;
    A->capacity = cap;
    return SAP_OK;
}

sap_status sap_coo_push(sap_coo *A, sap_int i, sap_int j, double v)
{
    if (!A) return SAP_ERR_INVALID;
    if (i < 0 || i >= A->nrows || j < 0 || j >= A->ncols)
        return SAP_ERROR(A->ctx, SAP_ERR_INDEX, "entry (%lld, %lld) outside a %lld x %lld matrix", (long long)i,
                         (long long)j, (long long)A->nrows, (long long)A->ncols);
    sap_status st = coo_reserve(A, A->nnz + 1);
    if (st < 0) return st;
    A->row[A->nnz] = i;
    A->col[A->nnz] = j;
    A->val[A->nnz] = v;
    A->nnz++;
    return SAP_OK;
}
