/* sort_pairs.c -- sorts (column, value) pairs by column in place: insertion sort for
 * short rows, introsort (quicksort + heapsort fallback) for long ones. */
#include "base/base.h"

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
