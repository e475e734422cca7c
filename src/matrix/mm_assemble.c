/* mm_assemble.c -- owns turning the parsed entries (mm_body.c) into results: a canonical
 * CSR from coordinate entries (rows bucketed in file order, symmetric and skew-symmetric
 * entries mirrored, then rows sorted and duplicates summed in file order), a CSR from
 * array values (every value kept, zeros included), and a dense matrix from either. */
#include "matrix/mm_read.h"

/* Stable sort of (col, val) pairs by col; tc, tv: scratch of n entries (may be NULL when
 * n <= 32). */
static void sort_row(sap_int *c, double *v, sap_int n, sap_int *tc, double *tv)
{
    if (n <= 32 || !tc) {
        for (sap_int a = 1; a < n; a++) {
            sap_int kc = c[a];
            double kv = v[a];
            sap_int b = a - 1;
            while (b >= 0 && c[b] > kc) {
                c[b + 1] = c[b];
                v[b + 1] = v[b];
                b--;
            }
            c[b + 1] = kc;
            v[b + 1] = kv;
        }
        return;
    }
    /* bottom-up merge sort: runs of 16 by insertion, then merges through the scratch */
    const sap_int run = 16;
    for (sap_int s = 0; s < n; s += run) sort_row(c + s, v + s, n - s < run ? n - s : run, NULL, NULL);
    sap_int *sc = c, *dc = tc;
    double *sv = v, *dv = tv;
    for (sap_int w = run; w < n; w *= 2) {
        for (sap_int lo = 0; lo < n; lo += 2 * w) {
            sap_int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            sap_int a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                if (sc[b] < sc[a]) {
                    dc[o] = sc[b];
                    dv[o++] = sv[b++];
                } else {
                    dc[o] = sc[a];
                    dv[o++] = sv[a++];
                }
            }
            while (a < mid) {
                dc[o] = sc[a];
                dv[o++] = sv[a++];
            }
            while (b < hi) {
                dc[o] = sc[b];
                dv[o++] = sv[b++];
            }
        }
        sap_int *xc = sc;
        sc = dc;
        dc = xc;
        double *xv = sv;
        sv = dv;
        dv = xv;
    }
    if (sc != c) {
        memcpy(c, sc, sizeof(sap_int) * (size_t)n);
        memcpy(v, sv, sizeof(double) * (size_t)n);
    }
}

/* Sorts unsorted rows and sums duplicates in place (rowptr and nnz updated). */
static sap_status canonicalize(sap_context *ctx, sap_csr *A)
{
    sap_status st = SAP_OK;
    sap_int *tc = NULL;
    double *tv = NULL;
    sap_int *rp = A->rowptr, *ci = A->colind;
    double *va = A->val;
    sap_int w = 0, start = 0;
    for (sap_int i = 0; i < A->nrows; i++) {
        sap_int a = start, b = rp[i + 1];
        start = b;
        bool sorted = true;
        for (sap_int q = a + 1; q < b; q++)
            if (ci[q] <= ci[q - 1]) {
                sorted = false;
                break;
            }
        if (sorted) {
            if (w != a) {
                memmove(ci + w, ci + a, sizeof(sap_int) * (size_t)(b - a));
                memmove(va + w, va + a, sizeof(double) * (size_t)(b - a));
            }
            rp[i] = w;
            w += b - a;
            continue;
        }
        if (b - a > 32 && !tc) {
            sap_int maxlen = 0;
            for (sap_int r = i; r < A->nrows; r++) {
                sap_int l = rp[r + 1] - (r == i ? a : rp[r]);
                if (l > maxlen) maxlen = l;
            }
            SAP_ALLOC(ctx, tc, maxlen);
            SAP_ALLOC(ctx, tv, maxlen);
        }
        sort_row(ci + a, va + a, b - a, tc, tv);
        rp[i] = w;
        for (sap_int q = a; q < b; q++) {
            if (w > rp[i] && ci[w - 1] == ci[q]) {
                va[w - 1] += va[q];
            } else {
                ci[w] = ci[q];
                va[w] = va[q];
                w++;
            }
        }
    }
    rp[A->nrows] = w;
    A->nnz = w;
cleanup:
    sap__free(ctx, tc);
    sap__free(ctx, tv);
    return st;
}

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
    SAP_TRY(canonicalize(ctx, A));
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
