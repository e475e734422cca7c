/* ilu_factor.c -- the host incomplete factorizations (ilu_factor.h): ILU(k) patterns,
 * ILU on a pattern (level-parallel), ILUT(p, tau), IC(0), and the L/U split. */
#include "base/csr_search.h"
#include "precond/ilu_factor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* levels of at least this many rows are factored in parallel (a fork/join costs more than
 * a few thousand short rows) */
#define ILU_PAR_ROWS 4096

static sap_status check_square(sap_context *ctx, const sap_csr *A, const char *what)
{
    if (!A || A->nrows != A->ncols) return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "%s: the matrix must be square", what);
    for (sap_int p = 0; p < A->nnz; p++)
        if (!isfinite(A->val[p])) return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "%s: entry %lld is %g", what, (long long)p, A->val[p]);
    return SAP_OK;
}

/* The pivot rule of ilu_factor.h (aii: the row's original diagonal); counts a
 * replacement in *cnt. */
static double fix_pivot(double p, double aii, double rnorm, double tol, sap_int *cnt)
{
    int s = 0;
    const double v = sap__ilu_fix_pivot(p, aii, rnorm, tol, &s);
    *cnt += s;
    return v;
}

/* Levels of the strictly lower pattern of a CSR (rows of one level are independent in a
 * row-wise factorization): *order lists the rows level by level, lptr[l] the starts. */
static sap_status lower_levels(sap_context *ctx, const sap_csr *A, sap_int **order, sap_int **lptr, sap_int *nlev)
{
    sap_status st = SAP_OK;
    const sap_int n = A->nrows;
    sap_int *lev = NULL, *cnt = NULL, nl = 0;
    *order = *lptr = NULL;
    SAP_ALLOC(ctx, lev, n > 0 ? n : 1);
    for (sap_int i = 0; i < n; i++) {
        sap_int l = 0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1] && A->colind[p] < i; p++)
            if (lev[A->colind[p]] + 1 > l) l = lev[A->colind[p]] + 1;
        lev[i] = l;
        if (l + 1 > nl) nl = l + 1;
    }
    SAP_CALLOC(ctx, cnt, nl + 1);
    SAP_ALLOC(ctx, *order, n > 0 ? n : 1);
    for (sap_int i = 0; i < n; i++) cnt[lev[i] + 1]++;
    for (sap_int l = 0; l < nl; l++) cnt[l + 1] += cnt[l];
    SAP_ALLOC(ctx, *lptr, nl + 1);
    memcpy(*lptr, cnt, sizeof(sap_int) * (size_t)(nl + 1));
    for (sap_int i = 0; i < n; i++) (*order)[cnt[lev[i]]++] = i;
    *nlev = nl;
cleanup:
    sap__free(ctx, lev);
    sap__free(ctx, cnt);
    if (st < 0) {
        SAP_FREE(ctx, *order);
        SAP_FREE(ctx, *lptr);
    }
    return st;
}

/* Runs row(M, dp, i, tol, &count) for every row, level after level, the rows of a wide
 * level in parallel; returns the summed count (shifted pivots). */
typedef void (*row_fn)(sap_csr *M, const sap_int *dp, sap_int i, double tol, sap_int *cnt);
static sap_int by_levels(sap_context *ctx, const sap_int *order, const sap_int *lptr, sap_int nl, row_fn row,
                         sap_csr *M, const sap_int *dp, double tol)
{
    const int nt = sap__threads(ctx);
    sap_int total = 0;
    for (sap_int l = 0; l < nl; l++) {
        const sap_int k0 = lptr[l], k1 = lptr[l + 1];
        sap_int cnt = 0;
        const int t = k1 - k0 >= ILU_PAR_ROWS ? nt : 1;
        (void)t;
        SAP_OMP("omp parallel for schedule(dynamic, 64) num_threads(t) reduction(+ : cnt)")
        for (sap_int k = k0; k < k1; k++) row(M, dp, order[k], tol, &cnt);
        total += cnt;
    }
    return total;
}

/* Position of the diagonal of every row (rows sorted, diagonal present). */
static sap_status diag_positions(sap_context *ctx, const sap_csr *A, sap_int **dp)
{
    sap_status st = SAP_OK;
    SAP_ALLOC(ctx, *dp, A->nrows > 0 ? A->nrows : 1);
    for (sap_int i = 0; i < A->nrows; i++) {
        sap_int p = A->rowptr[i];
        while (p < A->rowptr[i + 1] && A->colind[p] < i) p++;
        if (p == A->rowptr[i + 1] || A->colind[p] != i)
            SAP_FAIL(ctx, SAP_ERR_INVALID, "ilu: row %lld of the pattern has no diagonal entry", (long long)i);
        (*dp)[i] = p;
    }
cleanup:
    if (st < 0) SAP_FREE(ctx, *dp);
    return st;
}

/* ---- ILU(k) symbolic ------------------------------------------------------------------- */

sap_status sap__iluk_pattern(sap_context *ctx, const sap_csr *A, sap_int k, sap_csr **S)
{
    sap_status st = SAP_OK;
    sap_int *levw = NULL, *next = NULL, *rp = NULL, *ci = NULL, *lv = NULL, *udp = NULL;
    double *va = NULL;
    *S = NULL;
    SAP_TRY(check_square(ctx, A, "iluk"));
    if (k < 0) SAP_FAIL(ctx, SAP_ERR_INVALID, "iluk: level %lld < 0", (long long)k);
    const sap_int n = A->nrows;
    sap_int cap = A->nnz + n + 16, nz = 0;
    SAP_ALLOC(ctx, levw, n + 1);
    SAP_ALLOC(ctx, next, n + 1);
    SAP_ALLOC(ctx, rp, n + 1);
    SAP_ALLOC(ctx, udp, n > 0 ? n : 1);
    SAP_ALLOC(ctx, ci, cap);
    SAP_ALLOC(ctx, lv, cap);
    SAP_ALLOC(ctx, va, cap);
    for (sap_int j = 0; j <= n; j++) levw[j] = -1;
    rp[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        /* sorted list of the row's columns: first = next[n], n ends it */
        next[n] = n;
        sap_int tail = n;
        int have_diag = 0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const sap_int j = A->colind[p];
            if (!have_diag && j > i) { /* insert the diagonal before the first upper column */
                if (tail == n) next[n] = i; else next[tail] = i;
                levw[i] = 0;
                tail = i;
                have_diag = 1;
            }
            if (tail == n) next[n] = j; else next[tail] = j;
            levw[j] = 0;
            tail = j;
            if (j == i) have_diag = 1;
        }
        if (!have_diag) {
            if (tail == n) next[n] = i; else next[tail] = i;
            levw[i] = 0;
            tail = i;
        }
        if (tail == n) next[n] = n; else next[tail] = n;
        /* eliminate: columns below i in increasing order (the list stays sorted) */
        for (sap_int c = next[n]; c < i; c = next[c]) {
            const sap_int lik = levw[c];
            sap_int prev = c;
            for (sap_int q = udp[c] + 1; q < rp[c + 1]; q++) {
                const sap_int j = ci[q];
                const sap_int nl = lik + lv[q] + 1;
                if (nl > k) continue;
                if (levw[j] >= 0) {
                    if (nl < levw[j]) levw[j] = nl;
                } else { /* insert j after prev, walking forward (j > prev) */
                    while (next[prev] < j) prev = next[prev];
                    next[j] = next[prev];
                    next[prev] = j;
                    levw[j] = nl;
                }
                prev = j;
            }
        }
        /* store the row */
        sap_int len = 0;
        for (sap_int c = next[n]; c < n; c = next[c]) len++;
        if (nz + len > cap) {
            sap_int nc = cap * 2 > nz + len ? cap * 2 : nz + len;
            sap_int *t1 = sap__realloc(ctx, ci, (size_t)nc, sizeof(sap_int), __FILE__, __LINE__);
            if (!t1) SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "iluk: out of memory for the pattern (%lld entries)", (long long)nc);
            ci = t1;
            t1 = sap__realloc(ctx, lv, (size_t)nc, sizeof(sap_int), __FILE__, __LINE__);
            if (!t1) SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "iluk: out of memory for the pattern (%lld entries)", (long long)nc);
            lv = t1;
            double *t2 = sap__realloc(ctx, va, (size_t)nc, sizeof(double), __FILE__, __LINE__);
            if (!t2) SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "iluk: out of memory for the pattern (%lld entries)", (long long)nc);
            va = t2;
            cap = nc;
        }
        for (sap_int c = next[n]; c < n; c = next[c]) {
            if (c == i) udp[i] = nz;
            ci[nz] = c;
            lv[nz] = levw[c];
            va[nz++] = 0.0;
            levw[c] = -1;
        }
        rp[i + 1] = nz;
        /* A's values */
        sap_int q = rp[i];
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            while (ci[q] < A->colind[p]) q++;
            va[q] = A->val[p];
        }
    }
    SAP_TRY(sap_csr_create(ctx, n, n, nz, S));
    memcpy((*S)->rowptr, rp, sizeof(sap_int) * (size_t)(n + 1));
    if (nz) {
        memcpy((*S)->colind, ci, sizeof(sap_int) * (size_t)nz);
        memcpy((*S)->val, va, sizeof(double) * (size_t)nz);
    }
cleanup:
    sap__free(ctx, levw);
    sap__free(ctx, next);
    sap__free(ctx, rp);
    sap__free(ctx, udp);
    sap__free(ctx, ci);
    sap__free(ctx, lv);
    sap__free(ctx, va);
    return st;
}

/* ---- ILU on a pattern --------------------------------------------------------------------- */

static void ilu_row(sap_csr *LU, const sap_int *dp, sap_int i, double tol, sap_int *cnt)
{
    const sap_int *rp = LU->rowptr, *ci = LU->colind;
    double *v = LU->val;
    double rn = 0.0;
    for (sap_int p = rp[i]; p < rp[i + 1]; p++) rn = fmax(rn, fabs(v[p]));
    const double aii = v[dp[i]];
    for (sap_int p = rp[i]; p < dp[i]; p++) {
        const sap_int kk = ci[p];
        const double l = v[p] / v[dp[kk]];
        v[p] = l;
        if (l == 0.0) continue;
        sap_int r = p + 1;
        for (sap_int q = dp[kk] + 1; q < rp[kk + 1]; q++) {
            const sap_int j = ci[q];
            while (r < rp[i + 1] && ci[r] < j) r++;
            if (r == rp[i + 1]) break;
            if (ci[r] == j) v[r] -= l * v[q];
        }
    }
    v[dp[i]] = fix_pivot(v[dp[i]], aii, rn, tol, cnt);
}

sap_status sap__ilu_numeric(sap_context *ctx, sap_csr *LU, double pivot_tol, sap_int *shifted)
{
    sap_status st = SAP_OK;
    sap_int *dp = NULL, *order = NULL, *lptr = NULL, nl = 0, total = 0;
    SAP_TRY(check_square(ctx, LU, "ilu"));
    SAP_TRY(diag_positions(ctx, LU, &dp));
    SAP_TRY(lower_levels(ctx, LU, &order, &lptr, &nl));
    total = by_levels(ctx, order, lptr, nl, ilu_row, LU, dp, pivot_tol);
    for (sap_int p = 0; p < LU->nnz; p++)
        if (!isfinite(LU->val[p])) {
            sap_int i = 0;
            while (LU->rowptr[i + 1] <= p) i++;
            SAP_FAIL(ctx, SAP_ERR_SINGULAR, "ilu: the factor overflows in row %lld", (long long)i);
        }
    if (shifted) *shifted = total;
cleanup:
    sap__free(ctx, dp);
    sap__free(ctx, order);
    sap__free(ctx, lptr);
    return st;
}

/* ---- ILUT ----------------------------------------------------------------------------------- */

static void heap_push(sap_int *h, sap_int *len, sap_int x)
{
    sap_int c = (*len)++;
    while (c > 0 && h[(c - 1) / 2] > x) {
        h[c] = h[(c - 1) / 2];
        c = (c - 1) / 2;
    }
    h[c] = x;
}

static sap_int heap_pop(sap_int *h, sap_int *len)
{
    const sap_int top = h[0], x = h[--(*len)];
    sap_int c = 0;
    for (;;) {
        sap_int m = 2 * c + 1;
        if (m >= *len) break;
        if (m + 1 < *len && h[m + 1] < h[m]) m++;
        if (h[m] >= x) break;
        h[c] = h[m];
        c = m;
    }
    if (*len > 0) h[c] = x;
    return top;
}

static const double *g_sort_w; /* qsort context (sequential ILUT only) */
static int by_magnitude(const void *a, const void *b)
{
    const double x = fabs(g_sort_w[*(const sap_int *)a]), y = fabs(g_sort_w[*(const sap_int *)b]);
    if (x != y) return x < y ? 1 : -1;
    return *(const sap_int *)a < *(const sap_int *)b ? -1 : 1;
}
static int by_index(const void *a, const void *b)
{
    const sap_int x = *(const sap_int *)a, y = *(const sap_int *)b;
    return x < y ? -1 : x > y;
}

/* Keeps the (at most) p largest of the m columns in c[] (by |w|), sorted by column. */
static sap_int keep_largest(sap_int *c, sap_int m, sap_int p, const double *w)
{
    if (m > p) {
        g_sort_w = w;
        qsort(c, (size_t)m, sizeof(sap_int), by_magnitude);
        m = p;
    }
    qsort(c, (size_t)m, sizeof(sap_int), by_index);
    return m;
}

sap_status sap__ilut(sap_context *ctx, const sap_csr *A, sap_int pmax, double tau, double pivot_tol, sap_csr **LU,
                     sap_int *shifted)
{
    sap_status st = SAP_OK;
    double *w = NULL, *va = NULL;
    sap_int *pos = NULL, *list = NULL, *heap = NULL, *lo = NULL, *up = NULL, *rp = NULL, *ci = NULL, *udp = NULL;
    *LU = NULL;
    SAP_TRY(check_square(ctx, A, "ilut"));
    if (pmax < 0 || !(tau >= 0.0))
        SAP_FAIL(ctx, SAP_ERR_INVALID, "ilut: bad parameters p = %lld, tau = %g", (long long)pmax, tau);
    const sap_int n = A->nrows;
    sap_int cap = A->nnz + n + 16, nz = 0, cnt = 0;
    SAP_CALLOC(ctx, w, n + 1);
    SAP_ALLOC(ctx, pos, n + 1);
    SAP_ALLOC(ctx, list, n + 1);
    SAP_ALLOC(ctx, heap, n + 1);
    SAP_ALLOC(ctx, lo, n + 1);
    SAP_ALLOC(ctx, up, n + 1);
    SAP_ALLOC(ctx, rp, n + 1);
    SAP_ALLOC(ctx, udp, n + 1);
    SAP_ALLOC(ctx, ci, cap);
    SAP_ALLOC(ctx, va, cap);
    for (sap_int j = 0; j <= n; j++) pos[j] = -1;
    rp[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        sap_int nlist = 0, nheap = 0;
        double rn1 = 0.0, rninf = 0.0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const sap_int j = A->colind[p];
            rn1 += fabs(A->val[p]);
            rninf = fmax(rninf, fabs(A->val[p]));
            if (pos[j] < 0) {
                pos[j] = nlist;
                list[nlist++] = j;
                w[j] = 0.0;
                if (j < i) heap_push(heap, &nheap, j);
            }
            w[j] += A->val[p];
        }
        if (pos[i] < 0) {
            pos[i] = nlist;
            list[nlist++] = i;
            w[i] = 0.0;
        }
        const sap_int len = A->rowptr[i + 1] - A->rowptr[i];
        const double thr = len > 0 ? tau * rn1 / (double)len : 0.0, aii = w[i];
        while (nheap > 0) {
            const sap_int k = heap_pop(heap, &nheap);
            const double wk = w[k] / va[udp[k]];
            w[k] = wk;
            if (fabs(wk) < thr || wk == 0.0) {
                w[k] = 0.0;
                continue;
            }
            for (sap_int q = udp[k] + 1; q < rp[k + 1]; q++) {
                const sap_int j = ci[q];
                if (pos[j] < 0) {
                    pos[j] = nlist;
                    list[nlist++] = j;
                    w[j] = 0.0;
                    if (j < i) heap_push(heap, &nheap, j);
                }
                w[j] -= wk * va[q];
            }
        }
        sap_int nlo = 0, nup = 0;
        for (sap_int t = 0; t < nlist; t++) {
            const sap_int j = list[t];
            if (j == i || w[j] == 0.0 || fabs(w[j]) < thr) continue;
            if (j < i) lo[nlo++] = j;
            else up[nup++] = j;
        }
        nlo = keep_largest(lo, nlo, pmax, w);
        nup = keep_largest(up, nup, pmax, w);
        if (nz + nlo + nup + 1 > cap) {
            sap_int nc = cap * 2 > nz + nlo + nup + 1 ? cap * 2 : nz + nlo + nup + 1;
            sap_int *t1 = sap__realloc(ctx, ci, (size_t)nc, sizeof(sap_int), __FILE__, __LINE__);
            if (!t1) SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "ilut: out of memory for the factor (%lld entries)", (long long)nc);
            ci = t1;
            double *t2 = sap__realloc(ctx, va, (size_t)nc, sizeof(double), __FILE__, __LINE__);
            if (!t2) SAP_FAIL(ctx, SAP_ERR_OUT_OF_MEMORY, "ilut: out of memory for the factor (%lld entries)", (long long)nc);
            va = t2;
            cap = nc;
        }
        for (sap_int t = 0; t < nlo; t++) {
            ci[nz] = lo[t];
            va[nz++] = w[lo[t]];
        }
        udp[i] = nz;
        ci[nz] = i;
        va[nz++] = fix_pivot(w[i], aii, rninf, pivot_tol, &cnt);
        for (sap_int t = 0; t < nup; t++) {
            ci[nz] = up[t];
            va[nz++] = w[up[t]];
        }
        rp[i + 1] = nz;
        for (sap_int t = 0; t < nlist; t++) {
            pos[list[t]] = -1;
            w[list[t]] = 0.0;
        }
        for (sap_int q = rp[i]; q < nz; q++)
            if (!isfinite(va[q])) SAP_FAIL(ctx, SAP_ERR_SINGULAR, "ilut: the factor overflows in row %lld", (long long)i);
    }
    SAP_TRY(sap_csr_create(ctx, n, n, nz, LU));
    memcpy((*LU)->rowptr, rp, sizeof(sap_int) * (size_t)(n + 1));
    if (nz) {
        memcpy((*LU)->colind, ci, sizeof(sap_int) * (size_t)nz);
        memcpy((*LU)->val, va, sizeof(double) * (size_t)nz);
    }
    if (shifted) *shifted = cnt;
cleanup:
    sap__free(ctx, w);
    sap__free(ctx, pos);
    sap__free(ctx, list);
    sap__free(ctx, heap);
    sap__free(ctx, lo);
    sap__free(ctx, up);
    sap__free(ctx, rp);
    sap__free(ctx, udp);
    sap__free(ctx, ci);
    sap__free(ctx, va);
    return st;
}

/* ---- IC(0) ------------------------------------------------------------------------------------ */

static void ic_row(sap_csr *L, const sap_int *unused, sap_int i, double tol, sap_int *cnt)
{
    (void)unused;
    const sap_int *rp = L->rowptr, *ci = L->colind;
    double *v = L->val;
    const sap_int d = rp[i + 1] - 1; /* the diagonal is the last entry of a lower row */
    double rn = 0.0;
    for (sap_int p = rp[i]; p <= d; p++) rn = fmax(rn, fabs(v[p]));
    for (sap_int p = rp[i]; p < d; p++) {
        const sap_int j = ci[p];
        double s = v[p];
        sap_int a = rp[i], b = rp[j];
        while (a < p && b < rp[j + 1] - 1) { /* sum_k<j l_ik l_jk */
            if (ci[a] == ci[b]) s -= v[a++] * v[b++];
            else if (ci[a] < ci[b]) a++;
            else b++;
        }
        v[p] = s / v[rp[j + 1] - 1];
    }
    const double aii = v[d];
    double s = aii;
    for (sap_int p = rp[i]; p < d; p++) s -= v[p] * v[p];
    if (!(s > tol * rn)) s = fabs(fix_pivot(0.0, aii, rn, tol, cnt));
    v[d] = sqrt(s);
}

sap_status sap__ic0(sap_context *ctx, const sap_csr *A, double pivot_tol, sap_csr **Lout, sap_int *shifted)
{
    sap_status st = SAP_OK;
    sap_csr *S = NULL, *L = NULL;
    sap_int *order = NULL, *lptr = NULL, nl = 0, total = 0;
    *Lout = NULL;
    SAP_TRY(sap__iluk_pattern(ctx, A, 0, &S)); /* A's pattern with every diagonal */
    const sap_int n = S->nrows;
    sap_int nz = 0;
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = S->rowptr[i]; p < S->rowptr[i + 1] && S->colind[p] <= i; p++) nz++;
    SAP_TRY(sap_csr_create(ctx, n, n, nz, &L));
    nz = 0;
    L->rowptr[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        for (sap_int p = S->rowptr[i]; p < S->rowptr[i + 1] && S->colind[p] <= i; p++) {
            L->colind[nz] = S->colind[p];
            L->val[nz++] = S->val[p];
        }
        L->rowptr[i + 1] = nz;
    }
    SAP_TRY(lower_levels(ctx, L, &order, &lptr, &nl));
    total = by_levels(ctx, order, lptr, nl, ic_row, L, NULL, pivot_tol);
    for (sap_int p = 0; p < L->nnz; p++)
        if (!isfinite(L->val[p])) SAP_FAIL(ctx, SAP_ERR_SINGULAR, "ic0: the factor overflows (entry %lld)", (long long)p);
    if (shifted) *shifted = total;
    *Lout = L;
    L = NULL;
cleanup:
    sap_csr_destroy(S);
    sap_csr_destroy(L);
    sap__free(ctx, order);
    sap__free(ctx, lptr);
    return st;
}

sap_status sap__parilu_start(sap_context *ctx, const sap_csr *A, sap_csr **S, sap_csr **LU)
{
    sap_status st = SAP_OK;
    *LU = NULL;
    SAP_TRY(sap__iluk_pattern(ctx, A, 0, S));
    SAP_TRY(sap_csr_copy(*S, LU));
    const sap_csr *P = *S;
    for (sap_int i = 0; i < P->nrows; i++)
        for (sap_int p = P->rowptr[i]; p < P->rowptr[i + 1] && P->colind[p] < i; p++) {
            const sap_int q = sap__csr_find(P->rowptr, P->colind, P->colind[p], P->colind[p]);
            if (q >= 0 && P->val[q] != 0.0) (*LU)->val[p] = P->val[p] / P->val[q];
        }
cleanup:
    return st;
}

sap_status sap__ilu_fix_pivots(sap_context *ctx, sap_csr *LU, const sap_csr *A, double pivot_tol, sap_int *shifted)
{
    sap_int cnt = 0;
    for (sap_int i = 0; i < LU->nrows; i++) {
        double rn = 0.0, aii = 0.0;
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            rn = fmax(rn, fabs(A->val[p]));
            if (A->colind[p] == i) aii = A->val[p];
        }
        for (sap_int p = LU->rowptr[i]; p < LU->rowptr[i + 1]; p++) {
            if (!isfinite(LU->val[p]))
                return SAP_ERROR(ctx, SAP_ERR_SINGULAR, "ilu: the factor is not finite in row %lld", (long long)i);
            if (LU->colind[p] == i) LU->val[p] = fix_pivot(LU->val[p], aii, rn, pivot_tol, &cnt);
        }
    }
    if (shifted) *shifted = cnt;
    return SAP_OK;
}

/* ---- ISAI ------------------------------------------------------------------------------------ */

/* Row i of M: J = the columns of T's row i with the diagonal (sorted), D = T(J, J) dense
 * (m x m, row-major), then D^T m = e_i by substitution.  Returns 0, or the failing status. */
static sap_status isai_row(const sap_csr *T, int upper, int unit, sap_int i, sap_int *J, sap_int *pos, double *D,
                           double *x, sap_csr *M)
{
    const sap_int r0 = M->rowptr[i], m = M->rowptr[i + 1] - r0;
    for (sap_int a = 0; a < m; a++) {
        J[a] = M->colind[r0 + a];
        pos[J[a]] = a;
    }
    for (sap_int a = 0; a < m * m; a++) D[a] = 0.0;
    for (sap_int a = 0; a < m; a++) {
        const sap_int r = J[a];
        for (sap_int p = T->rowptr[r]; p < T->rowptr[r + 1]; p++) {
            const sap_int b = pos[T->colind[p]];
            if (b >= 0 && T->colind[p] != r) D[a * m + b] = T->val[p];
            if (T->colind[p] == r && !unit) D[a * m + a] = T->val[p];
        }
        if (unit) D[a * m + a] = 1.0;
    }
    for (sap_int a = 0; a < m; a++) pos[J[a]] = -1;
    /* D^T x = e_i; lower T: D^T is upper, i is J[m-1]: back substitution; upper T: D^T is
     * lower, i is J[0]: forward substitution.  (D^T)_ab = D[b * m + a]. */
    sap_status st = SAP_OK;
    for (sap_int s = 0; s < m; s++) {
        const sap_int a = upper ? s : m - 1 - s;
        double v = J[a] == i ? 1.0 : 0.0;
        if (upper)
            for (sap_int b = 0; b < a; b++) v -= D[b * m + a] * x[b];
        else
            for (sap_int b = a + 1; b < m; b++) v -= D[b * m + a] * x[b];
        const double d = D[a * m + a];
        if (d == 0.0) st = SAP_ERR_SINGULAR;
        x[a] = d != 0.0 ? v / d : 0.0;
    }
    for (sap_int a = 0; a < m; a++) M->val[r0 + a] = x[a];
    return st;
}

sap_status sap__isai(sap_context *ctx, const sap_csr *T, int upper, int unit, sap_csr **Mout)
{
    sap_status st = SAP_OK;
    sap_csr *M = NULL;
    sap_int *J = NULL, *pos = NULL;
    double *D = NULL, *x = NULL;
    *Mout = NULL;
    SAP_TRY(check_square(ctx, T, "isai"));
    const sap_int n = T->nrows;
    /* pattern: T's row (the right triangle only) with the diagonal */
    sap_int nz = 0, maxrow = 0;
    for (sap_int i = 0; i < n; i++) {
        sap_int len = 1;
        for (sap_int p = T->rowptr[i]; p < T->rowptr[i + 1]; p++)
            len += upper ? T->colind[p] > i : T->colind[p] < i;
        nz += len;
        if (len > maxrow) maxrow = len;
    }
    if (maxrow > SAP_ISAI_MAX_ROW)
        SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "isai: a factor row of %lld entries (at most %d)", (long long)maxrow,
                 SAP_ISAI_MAX_ROW);
    SAP_TRY(sap_csr_create(ctx, n, n, nz, &M));
    nz = 0;
    M->rowptr[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        if (upper) M->colind[nz++] = i;
        for (sap_int p = T->rowptr[i]; p < T->rowptr[i + 1]; p++)
            if (upper ? T->colind[p] > i : T->colind[p] < i) M->colind[nz++] = T->colind[p];
        if (!upper) M->colind[nz++] = i;
        M->rowptr[i + 1] = nz;
    }
    SAP_ALLOC(ctx, J, maxrow);
    SAP_ALLOC(ctx, pos, n > 0 ? n : 1);
    SAP_ALLOC(ctx, D, maxrow * maxrow);
    SAP_ALLOC(ctx, x, maxrow);
    for (sap_int i = 0; i < n; i++) pos[i] = -1;
    for (sap_int i = 0; i < n; i++)
        if (isai_row(T, upper, unit, i, J, pos, D, x, M) < 0)
            SAP_FAIL(ctx, SAP_ERR_SINGULAR, "isai: a zero diagonal entry in the rows of row %lld", (long long)i);
    *Mout = M;
    M = NULL;
cleanup:
    sap_csr_destroy(M);
    sap__free(ctx, J);
    sap__free(ctx, pos);
    sap__free(ctx, D);
    sap__free(ctx, x);
    return st;
}

/* ---- split ------------------------------------------------------------------------------------ */

sap_status sap__lu_split(sap_context *ctx, const sap_csr *LU, sap_csr **L, sap_csr **U)
{
    sap_status st = SAP_OK;
    const sap_int n = LU->nrows;
    sap_int nl = 0;
    *L = *U = NULL;
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = LU->rowptr[i]; p < LU->rowptr[i + 1]; p++) nl += LU->colind[p] < i;
    SAP_TRY(sap_csr_create(ctx, n, n, nl, L));
    SAP_TRY(sap_csr_create(ctx, n, n, LU->nnz - nl, U));
    sap_int a = 0, b = 0;
    (*L)->rowptr[0] = (*U)->rowptr[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        for (sap_int p = LU->rowptr[i]; p < LU->rowptr[i + 1]; p++) {
            if (LU->colind[p] < i) {
                (*L)->colind[a] = LU->colind[p];
                (*L)->val[a++] = LU->val[p];
            } else {
                (*U)->colind[b] = LU->colind[p];
                (*U)->val[b++] = LU->val[p];
            }
        }
        (*L)->rowptr[i + 1] = a;
        (*U)->rowptr[i + 1] = b;
    }
cleanup:
    if (st < 0) {
        sap_csr_destroy(*L);
        sap_csr_destroy(*U);
        *L = *U = NULL;
    }
    return st;
}
