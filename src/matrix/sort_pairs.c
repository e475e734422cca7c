/* sort_pairs.c -- owns ordering the (column, value) pairs of CSR rows, and the one
 * canonicalization of the library (sap__csr_canonicalize: rows sorted by column,
 * duplicates summed in their original order), which the Matrix Market reader and
 * sap_csr_from_coo / sap_csr_from_arrays call.
 *
 * Two orders on one insertion sort:
 *  - sap__sort_pairs: in place, no memory, not stable (introsort: quicksort with a
 *    heapsort fallback), for rows whose columns are distinct (permuted or generated
 *    rows; it is called inside parallel loops that have no context to allocate from);
 *  - merge_sort: stable (runs of 16 by insertion, bottom-up merges through a scratch
 *    of the longest row), for rows with duplicates, whose sum must not depend on the
 *    sort. */
#include "base/base.h"
#include "matrix/sort_pairs.h"

#include <string.h>

static inline void swap_pair(sap_int *c, double *v, sap_int a, sap_int b)
{
    sap_int tc = c[a];
    c[a] = c[b];
    c[b] = tc;
    double tv = v[a];
    v[a] = v[b];
    v[b] = tv;
}

static void insertion_sort(sap_int *c, double *v, sap_int n)
{
    for (sap_int i = 1; i < n; i++) {
        sap_int ci = c[i];
        if (c[i - 1] <= ci) continue;
        double vi = v[i];
        sap_int j = i;
        while (j > 0 && c[j - 1] > ci) {
            c[j] = c[j - 1];
            v[j] = v[j - 1];
            j--;
        }
        c[j] = ci;
        v[j] = vi;
    }
}

static void sift_down(sap_int *c, double *v, sap_int root, sap_int n)
{
    sap_int rc = c[root];
    double rv = v[root];
    for (;;) {
        sap_int child = 2 * root + 1;
        if (child >= n) break;
        if (child + 1 < n && c[child + 1] > c[child]) child++;
        if (c[child] <= rc) break;
        c[root] = c[child];
        v[root] = v[child];
        root = child;
    }
    c[root] = rc;
    v[root] = rv;
}

static void heap_sort(sap_int *c, double *v, sap_int n)
{
    for (sap_int i = n / 2 - 1; i >= 0; i--) sift_down(c, v, i, n);
    for (sap_int end = n - 1; end > 0; end--) {
        swap_pair(c, v, 0, end);
        sift_down(c, v, 0, end);
    }
}

/* Introsort: quicksort (median of three, Hoare partition) recursing on the smaller side,
 * heapsort past the depth limit, insertion sort for short ranges. */
static void intro_sort(sap_int *c, double *v, sap_int n, int depth)
{
    while (n > 24) {
        if (depth-- <= 0) {
            heap_sort(c, v, n);
            return;
        }
        sap_int mid = (n - 1) / 2, last = n - 1;
        if (c[mid] < c[0]) swap_pair(c, v, mid, 0);
        if (c[last] < c[0]) swap_pair(c, v, last, 0);
        if (c[last] < c[mid]) swap_pair(c, v, last, mid);
        sap_int pivot = c[mid];
        sap_int i = -1, j = n;
        for (;;) {
            do i++;
            while (c[i] < pivot);
            do j--;
            while (c[j] > pivot);
            if (i >= j) break;
            swap_pair(c, v, i, j);
        }
        /* [0, j] and [j + 1, n) */
        sap_int nl = j + 1, nr = n - nl;
        if (nl < nr) {
            intro_sort(c, v, nl, depth);
            c += nl;
            v += nl;
            n = nr;
        } else {
            intro_sort(c + nl, v + nl, nr, depth);
            n = nl;
        }
    }
    insertion_sort(c, v, n);
}

void sap__sort_pairs(sap_int *c, double *v, sap_int n)
{
    if (n <= 32) {
        insertion_sort(c, v, n);
        return;
    }
    sap_int k = 1;
    while (k < n && c[k - 1] < c[k]) k++;
    if (k == n) return; /* already sorted */
    int depth = 0;
    for (sap_int m = n; m > 1; m >>= 1) depth += 2;
    intro_sort(c, v, n, depth);
}

/* Stable sort of (col, val) pairs by col; tc, tv: scratch of n entries (may be NULL when
 * n <= 32). */
static void merge_sort(sap_int *c, double *v, sap_int n, sap_int *tc, double *tv)
{
    if (n <= 32 || !tc) {
        insertion_sort(c, v, n);
        return;
    }
    /* bottom-up merge sort: runs of 16 by insertion, then merges through the scratch */
    const sap_int run = 16;
    for (sap_int s = 0; s < n; s += run) insertion_sort(c + s, v + s, n - s < run ? n - s : run);
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

sap_status sap__csr_canonicalize(sap_context *ctx, sap_csr *A)
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
        merge_sort(ci + a, va + a, b - a, tc, tv);
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
