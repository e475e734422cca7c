/* csr_permute.c -- B = A(p, q), permutation checks and inverses.
 * Rows of B are copied in parallel; after a column permutation each row is re-sorted
 * in place (insertion sort for short rows, introsort for long ones). */
#include "sap_internal.h"

#ifdef _OPENMP
#define SAP_OMP(x) _Pragma(x)
#else
#define SAP_OMP(x)
#endif

#define PAR_MIN_WORK 32768

/* ---- sorting (column, value) pairs by column ------------------------------------------ */

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

static void sort_row(sap_int *c, double *v, sap_int n)
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
    if (n / nt < PAR_MIN_WORK) nt = 1;
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
    if ((nnz + n) / nt < PAR_MIN_WORK) nt = 1;
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
            sort_row(bi + dst, bx + dst, len);
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
