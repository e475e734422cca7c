/* csr_permute.c -- B = A(p, q), permutation checks and inverses.
 * Rows of B are copied in parallel; after a column permutation each row is put in order
 * again: through a dense window of positions when its new columns are close together
 * (a band: O(row length)), else sorted in place (insertion sort for short rows,
 * introsort for long ones). */
#include "base/base.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#define PERMUTE_WINDOW_MAX 65536 /* the widest window (sap_int slots per thread) */

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
    int nt = sap__threads_for(ctx, (double)n);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (sap_int i = 0; i < n; i++) pinv[p[i]] = i;
    return SAP_OK;
}

/* ---- B = A(p, q) ------------------------------------------------------------------------ */

sap_int *sap__window_slots(sap_context *ctx, int nt, sap_int maxlen, sap_int m, sap_int cap, sap_int *wcap)
{
    sap_int w = 4 * maxlen + 64;
    if (w > cap) w = cap;
    if (w > m) w = m;
    if (w < 1) w = 1;
    if (nt < 1) nt = 1;
    *wcap = w;
    sap_int *s = sap__alloc(ctx, (size_t)nt * (size_t)w, sizeof(sap_int), false, __FILE__, __LINE__);
    if (s)
        for (size_t k = 0; k < (size_t)nt * (size_t)w; k++) s[k] = -1;
    return s;
}

sap_status sap_csr_permute(const sap_csr *A, const sap_int *p, const sap_int *q, sap_csr **out)
{
    return sap__csr_permute_scaled(A, p, q, NULL, NULL, out);
}

sap_status sap__csr_permute_scaled(const sap_csr *A, const sap_int *p, const sap_int *q, const double *rs,
                                   const double *cs, sap_csr **out)
{
    return sap__csr_permute_scaled_into(A, p, q, rs, cs, NULL, out);
}

sap_status sap__csr_permute_scaled_into(const sap_csr *A, const sap_int *p, const sap_int *q, const double *rs,
                                        const double *cs, double *val, sap_csr **out)
{
    return sap__csr_permute_scaled_shape(A, p, q, rs, cs, val, NULL, out);
}

void sap__copy_shape_finish(sap__copy_shape *sh, sap_int kmax, const double *dmin_b, sap_int nb, double **h,
                            sap_int hl, int nt)
{
    double dmin = INFINITY;
    for (sap_int b = 0; b < nb; b++)
        if (dmin_b[b] < dmin) dmin = dmin_b[b];
    if (*h) sap__dist_hist_merge(*h, nb, hl, nt);
    sh->done = 1;
    sh->K = kmax;
    sh->d = dmin;
    sh->hist = *h;
    sh->hist_len = *h ? hl : 0;
    *h = NULL;
}

/* One row of the copy: row r of A (at src, len entries) as row i of B (its values at
 * B->val + dst, its columns copied to B->colind + dst unless B shares A's), scaled r_i a_ij
 * c_j; their squares into the distance histogram hb (NULL: none); the row's diagonal and
 * off-diagonal magnitudes summed.  dg (may be NULL, rows in A's order): |a_jj| of every row
 * j, for DB's S0 test: returns 1 when an entry is not finite or larger than |a_ii|, else
 * sets *asym where some |a_ij|^2 > |a_ii a_jj|. */
static inline int copy_row(const sap_csr *A, sap_csr *B, sap_int i, sap_int r, sap_int dst, const double *rs,
                           const double *cs, const double *dg, double *hb, double *dsum, double *osum, int *asym)
{
    const sap_int src = A->rowptr[r], len = A->rowptr[r + 1] - src, *ai = A->colind + src;
    const double *ax = A->val + src, ri = rs ? rs[r] : 1.0;
    double *bv = B->val + dst, diag = 0, off = 0, mo = 0;
    int nf = 0, as = 0;
    if (B->colind != A->colind) memcpy(B->colind + dst, ai, sizeof(sap_int) * (size_t)len);
    for (sap_int k = 0; k < len; k++) {
        const sap_int c = ai[k], d = c > i ? c - i : i - c;
        const double v = rs ? (ri * ax[k]) * cs[c] : ax[k];
        bv[k] = v;
        if (hb) hb[d] += v * v;
        if (c == i) diag += fabs(v);
        else off += fabs(v);
        if (dg) {
            const double a = fabs(ax[k]);
            nf |= !(a < INFINITY);
            if (c != i && a > mo) mo = a;
            as |= a * a > dg[i] * dg[c];
        }
    }
    *dsum = diag;
    *osum = off;
    if (as) *asym = 1;
    return dg && (nf || mo > dg[i]);
}

sap_status sap__csr_rows_shape(const sap_csr *A, const sap_int *p, const double *rs, const double *cs,
                               const double *dg, sap_csr *B, int nt, sap__copy_shape *sh, int *s0)
{
    sap_context *ctx = A->ctx;
    sap_status st = SAP_OK;
    const sap_int n = A->nrows, *ap = A->rowptr, *ai = A->colind, *bp = B->rowptr;
    double *h = NULL, *dmin_b = NULL;
    if (A->nnz < 200000) nt = 1; /* (sap__drop_hist's rule) */
    sap_int kmax = 0;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(max : kmax)")
    for (sap_int i = 0; i < n; i++) {
        const sap_int r = p ? p[i] : i;
        if (ap[r + 1] == ap[r]) continue;
        const sap_int a = i - ai[ap[r]], b = ai[ap[r + 1] - 1] - i, d = a > b ? a : b;
        if (d > kmax) kmax = d;
    }
    const sap_int hl = kmax + 1, nb = sap__dist_hist_blocks(B, hl);
    if (sh && sh->want_hist) SAP_CALLOC(ctx, h, (size_t)hl * (size_t)nb);
    SAP_ALLOC(ctx, dmin_b, nb);
    const int nt_all = nt;
    if (nt > nb) nt = (int)nb;
    atomic_int bad, asym;
    atomic_init(&bad, 0);
    atomic_init(&asym, 0);
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (sap_int b = 0; b < nb; b++) {
        sap_int r0 = 0, r1 = 0;
        sap__dist_hist_block_rows(B, nb, b, &r0, &r1);
        double *hb = h ? h + (size_t)b * (size_t)hl : NULL, dm = INFINITY;
        int as = 0;
        for (sap_int i = r0; i < r1; i++) {
            if (dg && atomic_load_explicit(&bad, memory_order_relaxed)) break;
            double diag, off;
            if (copy_row(A, B, i, p ? p[i] : i, bp[i], rs, cs, dg, hb, &diag, &off, &as))
                atomic_store_explicit(&bad, 1, memory_order_relaxed);
            if (off > 0 && diag / off < dm) dm = diag / off;
        }
        if (as) atomic_store_explicit(&asym, 1, memory_order_relaxed);
        dmin_b[b] = dm;
    }
    const int test = !dg ? 1 : atomic_load(&bad) ? 0 : atomic_load(&asym) ? 2 : 1;
    if (s0) *s0 = test;
    if (sh && test == 1) sap__copy_shape_finish(sh, kmax, dmin_b, nb, &h, hl, nt_all);
cleanup:
    sap__free(ctx, h);
    sap__free(ctx, dmin_b);
    return st;
}

sap_status sap__csr_permute_scaled_shape(const sap_csr *A, const sap_int *p, const sap_int *q, const double *rs,
                                         const double *cs, double *val, sap__copy_shape *sh, sap_csr **out)
{
    if (sh) sh->done = 0, sh->hist = NULL, sh->hist_len = 0;
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    sap_status st = SAP_OK;
    sap_int *qinv = NULL, *slots = NULL;
    sap_csr *B = NULL;
    if (out) *out = NULL;
    if (!out) SAP_FAIL(ctx, SAP_ERR_INVALID, "sap_csr_permute: output pointer is NULL");
    if (A->nrows < 0 || A->ncols < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        SAP_FAIL(ctx, SAP_ERR_INVALID, "sap_csr_permute: malformed CSR argument");
    const sap_int n = A->nrows, m = A->ncols, nnz = A->rowptr[n];
    if (p) SAP_TRY(perm_validate(ctx, n, p, "p"));
    if (q) {
        SAP_TRY(perm_validate(ctx, m, q, "q"));
        SAP_ALLOC(ctx, qinv, m);
        for (sap_int j = 0; j < m; j++) qinv[q[j]] = j;
    }
    SAP_TRY(sap_csr_create(ctx, n, m, nnz, &B));
    if (val) { /* the caller's buffer for the values (the created one untouched: no page of it used) */
        sap__free(ctx, B->val);
        B->val = val;
        val = NULL;
    }

    const sap_int *ap = A->rowptr, *ai = A->colind;
    const double *ax = A->val;
    sap_int *bp = B->rowptr, *bi = B->colind;
    double *bx = B->val;
    sap_int maxlen = 0;
    for (sap_int i = 0; i < n; i++) {
        sap_int r = p ? p[i] : i, len = ap[r + 1] - ap[r];
        bp[i + 1] = bp[i] + len;
        if (len > maxlen) maxlen = len;
    }
    int nt = sap__threads_for(ctx, (double)(nnz + n));
    if ((rs == NULL) != (cs == NULL))
        SAP_FAIL(ctx, SAP_ERR_INVALID, "sap_csr_permute: row and column scalings must both be given or both be NULL");
    /* a row whose new columns span at most wcap (and 4 x its length + 64) is ordered by a
     * scatter into a dense window of source positions, the others by sorting */
    if (sh && !qinv) { /* the copy and its shape in one pass */
        SAP_TRY(sap__csr_rows_shape(A, p, rs, cs, NULL, B, nt, sh, NULL));
        goto done;
    }
    sap_int wcap = 0;
    if (qinv && maxlen > 32 && !(slots = sap__window_slots(ctx, nt, maxlen, m, PERMUTE_WINDOW_MAX, &wcap))) {
        st = sap__alloc_failure((size_t)nt, (size_t)wcap * sizeof(sap_int));
        goto cleanup;
    }
    SAP_OMP("omp parallel num_threads(nt)")
    {
        int t, T;
        sap__omp_team(&t, &T);
        sap_int *slot = slots ? slots + (size_t)t * (size_t)wcap : NULL;
        SAP_OMP("omp for schedule(dynamic, 512)")
        for (sap_int i = 0; i < n; i++) {
            sap_int r = p ? p[i] : i;
            sap_int src = ap[r], len = ap[r + 1] - src, dst = bp[i];
            const double ri = rs ? rs[r] : 1.0;
#define PERMUTE_VAL(k) (rs ? (ri * ax[k]) * cs[ai[k]] : ax[k]) /* entry k of A, scaled */
            if (!qinv) {
                memcpy(bi + dst, ai + src, sizeof(sap_int) * (size_t)len);
                if (rs)
                    for (sap_int k = 0; k < len; k++) bx[dst + k] = PERMUTE_VAL(src + k);
                else
                    memcpy(bx + dst, ax + src, sizeof(double) * (size_t)len);
                continue;
            }
            sap_int cmin = m, cmax = -1;
            for (sap_int k = 0; k < len; k++) {
                const sap_int c = qinv[ai[src + k]];
                bi[dst + k] = c;
                if (c < cmin) cmin = c;
                if (c > cmax) cmax = c;
            }
            const sap_int w = cmax - cmin + 1;
            if (slot && len > 32 && w <= wcap && w <= 4 * len + 64) {
                int dup = 0;
                for (sap_int k = 0; k < len; k++) {
                    sap_int *s = &slot[bi[dst + k] - cmin];
                    dup |= *s >= 0;
                    *s = k;
                }
                if (!dup) {
                    sap_int pos = dst;
                    for (sap_int c = 0; c < w; c++)
                        if (slot[c] >= 0) {
                            bi[pos] = cmin + c;
                            bx[pos++] = PERMUTE_VAL(src + slot[c]);
                            slot[c] = -1;
                        }
                    continue;
                }
                for (sap_int c = 0; c < w; c++) slot[c] = -1; /* repeated columns: sorted below */
            }
            for (sap_int k = 0; k < len; k++) bx[dst + k] = PERMUTE_VAL(src + k);
            sap__sort_pairs(bi + dst, bx + dst, len);
#undef PERMUTE_VAL
        }
    }
done:
    *out = B;
    B = NULL;
cleanup:
    sap_csr_destroy(B);
    sap__free(ctx, val); /* taken in every case */
    sap__free(ctx, qinv);
    sap__free(ctx, slots);
    return st;
}
