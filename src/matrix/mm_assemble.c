/* mm_assemble.c -- owns turning the parsed entries (mm_body.c) into results: a canonical
 * CSR from coordinate entries (rows bucketed in file order, symmetric and skew-symmetric
 * entries mirrored, then rows sorted and duplicates summed in file order), a CSR from
 * array values (every value kept, zeros included), and a dense matrix from either. */
#include "matrix/mm_read.h"
#include "matrix/sort_pairs.h"

static sap_status build_csr_coordinate(sap_context *ctx, const mm_data *d, bool expand, sap_csr **out)
{
    sap_status st = SAP_OK;
    const mm_header *h = &d->h;
    const bool mirror = expand && h->symmetry != SAP_GENERAL;
    const double msign = h->symmetry == SAP_SKEW_SYMMETRIC ? -1.0 : 1.0;
    sap_int *next = NULL;
    sap_csr *A = NULL;
    SAP_CALLOC(ctx, next, h->nrows + 1);
    if (mirror) {
        FOR_TRIPLETS(d, {
            next[r + 1]++;
            if (r != j) next[j + 1]++;
        });
    } else {
        FOR_TRIPLETS(d, next[r + 1]++);
    }
    for (sap_int i = 0; i < h->nrows; i++) next[i + 1] += next[i];
    SAP_TRY(sap_csr_create(ctx, h->nrows, h->ncols, next[h->nrows], &A));
    memcpy(A->rowptr, next, sizeof(sap_int) * (size_t)(h->nrows + 1));
    sap_int *ci = A->colind;
    double *va = A->val;
    if (mirror) {
        FOR_TRIPLETS(d, {
            sap_int p = next[r]++;
            ci[p] = j;
            va[p] = v;
            if (r != j) {
                p = next[j]++;
                ci[p] = r;
                va[p] = msign * v;
            }
        });
    } else {
        FOR_TRIPLETS(d, {
            sap_int p = next[r]++;
            ci[p] = j;
            va[p] = v;
        });
    }
    SAP_TRY(sap__csr_canonicalize(ctx, A));
    *out = A;
    A = NULL;
cleanup:
    sap__free(ctx, next);
    sap_csr_destroy(A);
    return st;
}

static sap_status build_csr_array(sap_context *ctx, const mm_data *d, bool expand, sap_csr **out)
{
    sap_status st = SAP_OK;
    const mm_header *h = &d->h;
    const sap_int nr = h->nrows, nc = h->ncols;
    sap_csr *A = NULL;
    const bool full = h->symmetry == SAP_GENERAL || expand;
    const sap_int nnz = full ? nr * nc : h->entries;
    SAP_TRY(sap_csr_create(ctx, nr, nc, nnz, &A));
    sap_int *rp = A->rowptr, *ci = A->colind;
    double *va = A->val;
    if (full) {
        for (sap_int i = 0; i <= nr; i++) rp[i] = i * nc;
        for (sap_int i = 0; i < nr; i++)
            for (sap_int j = 0; j < nc; j++) ci[i * nc + j] = j;
        if (h->symmetry == SAP_GENERAL) {
            FOR_ARRAY_VALUES(d, va[i * nc + j] = v);
        } else {
            const double s = h->symmetry == SAP_SKEW_SYMMETRIC ? -1.0 : 1.0;
            if (h->symmetry == SAP_SKEW_SYMMETRIC)
                for (sap_int i = 0; i < nr; i++) va[i * nc + i] = 0.0;
            FOR_ARRAY_VALUES(d, {
                va[i * nc + j] = v;
                va[j * nc + i] = i == j ? v : s * v;
            });
        }
    } else {
        /* the stored lower triangle: row i holds columns 0..i (symmetric) or 0..i-1 (skew) */
        const bool skew = h->symmetry == SAP_SKEW_SYMMETRIC;
        for (sap_int i = 0; i <= nr; i++)
            rp[i] = skew ? (i % 2 ? (i - 1) / 2 * i : i / 2 * (i - 1)) : (i % 2 ? (i + 1) / 2 * i : i / 2 * (i + 1));
        FOR_ARRAY_VALUES(d, {
            ci[rp[i] + j] = j;
            va[rp[i] + j] = v;
        });
    }
    *out = A;
    return SAP_OK;
cleanup:
    sap_csr_destroy(A);
    return st;
}

sap_status sap__mm_build_dense(sap_context *ctx, const mm_data *d, bool expand, sap_dense **out)
{
    sap_status st = SAP_OK;
    const mm_header *h = &d->h;
    sap_dense *D = NULL;
    SAP_TRY(sap_dense_create(ctx, h->nrows, h->ncols, &D));
    const sap_int ld = D->ld;
    double *x = D->val;
    const bool mirror = expand && h->symmetry != SAP_GENERAL;
    const double s = h->symmetry == SAP_SKEW_SYMMETRIC ? -1.0 : 1.0;
    if (h->format == SAP_MM_ARRAY) {
        if (mirror) {
            FOR_ARRAY_VALUES(d, {
                x[i + j * ld] = v;
                if (i != j) x[j + i * ld] = s * v;
            });
        } else {
            FOR_ARRAY_VALUES(d, x[i + j * ld] = v);
        }
    } else {
        FOR_TRIPLETS(d, {
            x[r + j * ld] += v;
            if (mirror && r != j) x[j + r * ld] += s * v;
        });
    }
    *out = D;
    return SAP_OK;
cleanup:
    sap_dense_destroy(D);
    return st;
}

sap_status sap__mm_build_csr(sap_context *ctx, const mm_data *d, bool expand, sap_csr **out)
{
    if (d->h.format == SAP_MM_COORDINATE) return build_csr_coordinate(ctx, d, expand, out);
    return build_csr_array(ctx, d, expand, out);
}
