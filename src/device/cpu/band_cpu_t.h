/* band_cpu_t.h -- template: the cpu band kernels for one precision; band_cpu.c includes
 * it with S = d, REAL = double and S = s, REAL = float (cpu_template.h).  Storage as in
 * src/band/band_impl.h: a(r, c) = a[(c - r + K) * ld + r]. */
#include "device/cpu/cpu_template.h"

/* LU without pivoting of an nb x nb band (half-bandwidth K, leading dimension nb) in
 * place; pivots with |p| < thr become copysign(boost, p) (+boost for 0).  l and u: K
 * elements of work.  Returns the boosted pivots, or -1 when a stop was requested (stop:
 * the context polled every 32 steps, NULL: never; the factors are then unfinished). */
static sap_int FN(band_lu)(REAL *a, sap_int nb, sap_int K, REAL thr, REAL boost, REAL *l, REAL *u,
                           const sap_context *stop)
{
    sap_int nboost = 0;
    REAL *dg = a + K * nb;
    for (sap_int k = 0; k < nb; k++) {
        if (stop && (k & 31) == 0 && sap__stop_requested(stop)) return -1;
        REAL piv = dg[k];
        if (!(piv >= thr || piv <= -thr)) {
            piv = piv < 0 ? -boost : boost;
            dg[k] = piv;
            nboost++;
        }
        const sap_int kk = K < nb - 1 - k ? K : nb - 1 - k;
        if (kk == 0) continue;
        const REAL inv = (REAL)1 / piv;
        for (sap_int j = 0; j < kk; j++) {
            REAL *p = a + (K - 1 - j) * nb + k + 1 + j; /* a(k+1+j, k) */
            *p *= inv;
            l[j] = *p;
            u[j] = a[(K + 1 + j) * nb + k]; /* a(k, k+1+j) */
        }
        /* a(r, c) -= l(r) u(c) for r, c in k+1 .. k+kk, one diagonal dd = c - r at a time */
        for (sap_int dd = -(kk - 1); dd <= kk - 1; dd++) {
            const sap_int j0 = dd < 0 ? -dd : 0, j1 = kk - 1 - (dd > 0 ? dd : 0);
            REAL *restrict ar = a + (dd + K) * nb + k + 1;
            const REAL *restrict uu = u + dd;
            for (sap_int j = j0; j <= j1; j++) ar[j] -= l[j] * uu[j];
        }
    }
    return nboost;
}

/* ---- the blocked LU (sap_band_fact.blocked): the same factors as band_lu, up to rounding ----
 * The partition goes through the skewed column-major work array t, M(r, c) = t[ku + (r -
 * cb) + (c - cb) ldm] (band_kernels.h, with the origin moved to column cb), where every
 * rectangle of one step is a column-major matrix of leading dimension ldm: per block of bs =
 * SAP_CPU_BAND_BS columns j .. j + jb - 1, (1) LU of the jb x jb diagonal block with the
 * boosting of band_lu, (2) L21 = A21 U11^{-1} (h x jb, h = min(K, n - j - jb) rows), (3) U12 =
 * L11^{-1} A12 (jb x h), (4) A22 -= L21 U12 (h x h): the 2 n K^2 flops of the band LU in
 * gemm calls (LAPACK's BLAS when linked, loops otherwise).  (2) and (3) multiply by the
 * inverses of the diagonal block's factors: on the 2-core development host BLAS trsm ran
 * these 100 x 32 solves at 13 GFLOP/s, gemm at 45-50 (N = 200,000, K = 100: T_LU 0.40 ->
 * 0.27 s with that and bs 64 -> 32).  No fill leaves the band (no pivoting), so the
 * rectangles' entries beyond K stay zero.  Column c of M is the contiguous span of ldm + 1
 * elements at (c - cb)(ldm + 1), so t holds a window of sap__cpu_blk_cols(n, K) columns:
 * when a step needs columns beyond it, the final ones go out, the live ones move to the
 * front and the window fills up again.  Both copies run along a's diagonals (its storage),
 * in runs of ~K columns (the work array is ~2 (K + bs) columns, not the partition: 0.9 MB at
 * K = 100 where the whole partition of 200,000 rows took 0.5 GB). */

/* C(m x n) -= A(m x k) B(k x n), or C = A B (set), column-major */
static void FN(blk_gemm_op)(int set, sap_int m, sap_int n, sap_int k, const REAL *A, sap_int lda, const REAL *B,
                            sap_int ldb, REAL *C, sap_int ldc)
{
    if (m <= 0 || n <= 0) return;
#ifdef SAP_HAVE_LAPACK
    if (k > 0) {
        const int im = (int)m, in = (int)n, ik = (int)k, ia = (int)lda, ib = (int)ldb, ic = (int)ldc;
        const REAL alpha = set ? 1 : -1, beta = set ? 0 : 1;
        XGEMM("N", "N", &im, &in, &ik, &alpha, A, &ia, B, &ib, &beta, C, &ic, 1, 1);
        return;
    }
#endif
    for (sap_int c = 0; c < n; c++) {
        REAL *restrict cc = C + (int64_t)c * ldc;
        if (set)
            for (sap_int r = 0; r < m; r++) cc[r] = 0;
        for (sap_int p = 0; p < k; p++) {
            const REAL bpc = set ? B[p + (int64_t)c * ldb] : -B[p + (int64_t)c * ldb];
            if (bpc == 0) continue;
            const REAL *restrict ap = A + (int64_t)p * lda;
            for (sap_int r = 0; r < m; r++) cc[r] += ap[r] * bpc;
        }
    }
}
static void FN(blk_gemm)(sap_int m, sap_int n, sap_int k, const REAL *A, sap_int lda, const REAL *B, sap_int ldb, REAL *C,
                         sap_int ldc)
{
    FN(blk_gemm_op)(0, m, n, k, A, lda, B, ldb, C, ldc);
}

/* The inverses of the factors of an LU-factored jb x jb block d (leading dimension ldd):
 * ui = U^{-1} (upper) and li = L^{-1} (unit lower), column-major jb x jb, zero elsewhere.
 * jb^3 / 3 flops, column-oriented (each column an axpy sweep over d's columns). */
static void FN(blk_tri_inv)(const REAL *d, sap_int ldd, sap_int jb, REAL *ui, REAL *li)
{
    memset(ui, 0, sizeof(REAL) * (size_t)(jb * jb));
    memset(li, 0, sizeof(REAL) * (size_t)(jb * jb));
    for (sap_int c = 0; c < jb; c++) {
        REAL *restrict x = ui + (int64_t)c * jb; /* U x = e_c, x(c+1..) = 0 */
        x[c] = 1;
        for (sap_int p = c; p >= 0; p--) {
            const REAL *restrict up = d + (int64_t)p * ldd;
            const REAL xp = x[p] / up[p];
            x[p] = xp;
            for (sap_int r = 0; r < p; r++) x[r] -= up[r] * xp;
        }
        REAL *restrict y = li + (int64_t)c * jb; /* L y = e_c, y(..c-1) = 0 */
        y[c] = 1;
        for (sap_int p = c; p < jb; p++) {
            const REAL *restrict lp = d + (int64_t)p * ldd;
            const REAL yp = y[p];
            for (sap_int r = p + 1; r < jb; r++) y[r] -= lp[r] * yp;
        }
    }
}

/* Copy an m x n column-major matrix. */
static void FN(blk_mcopy)(sap_int m, sap_int n, const REAL *a, int64_t lda, REAL *b, int64_t ldb)
{
    for (sap_int c = 0; c < n; c++) memcpy(b + c * ldb, a + c * lda, sizeof(REAL) * (size_t)m);
}

/* Columns c0 .. c1 - 1 of the band between the partition a (n rows) and the work array m,
 * M(r, c) = m[(r - cb) + (c - cb) ldm] (in: a to m, else m to a); rev: M(r, c) is
 * A(n-1-r, n-1-c).  One diagonal at a time, so a is read and written contiguously (its
 * storage is by diagonals: a column of it would be 2 K + 1 strided accesses). */
static void FN(blk_copy)(REAL *a, sap_int n, sap_int K, int rev, REAL *m, int64_t ldm, int64_t cb, sap_int c0,
                          sap_int c1, int in)
{
    for (sap_int dd = -K; dd <= K; dd++) { /* dd = c - r */
        const sap_int lo = c0 > dd ? c0 : dd, hi = c1 < n + dd ? c1 : n + dd;
        if (lo >= hi) continue;
        REAL *restrict mm = m + (lo - dd - cb) + (lo - cb) * ldm;
        const int64_t step = ldm + 1;
        if (!rev) {
            REAL *restrict ad = a + (int64_t)(dd + K) * n + (lo - dd);
            if (in)
                for (sap_int i = 0; i < hi - lo; i++) mm[i * step] = ad[i];
            else
                for (sap_int i = 0; i < hi - lo; i++) ad[i] = mm[i * step];
        } else { /* A_(n-1-r, n-1-c) = a[(K - dd) n + n - 1 - r], r = c - dd */
            REAL *restrict ad = a + (int64_t)(K - dd) * n + (n - 1 - (lo - dd));
            if (in)
                for (sap_int i = 0; i < hi - lo; i++) mm[i * step] = ad[-i];
            else
                for (sap_int i = 0; i < hi - lo; i++) ad[-i] = mm[i * step];
        }
    }
}

/* rev: the LU of the reversal J A J (the copies in and out read and write A(n-1-r, n-1-c) for
 * M(r, c)), which leaves the UL factors of A in a (sap_band_fact.ul_blocked).  t: at least
 * sap__cpu_blk_elems(n, K) elements. */
static sap_int FN(band_lu_blocked)(REAL *a, sap_int n, sap_int K, REAL thr, REAL boost, REAL *t, const sap_context *stop,
                                   int rev)
{
    const sap_int bs = SAP_CPU_BAND_BS;
    const int64_t ku = (int64_t)K + bs - 1, ldm = 2 * ku, ldab = ldm + 1, wc = sap__cpu_blk_cols(n, K);
    /* after the window: the inverses of the diagonal block's factors and a copy of L21 / U12 */
    REAL *ui = t + wc * ldab + ku + 1, *li = ui + bs * bs, *xs = li + bs * bs;
    int64_t cb = 0;     /* the window's first column */
    sap_int loaded = 0; /* columns cb .. loaded - 1 are in it */
#define M_AT(r, c) (t + ku + ((int64_t)(r) - cb) + ((int64_t)(c) - cb) * ldm)
    sap_int nboost = 0;
    for (sap_int j = 0; j < n; j += bs) {
        if (stop && sap__stop_requested(stop)) return -1;
        const sap_int jb = bs < n - j ? bs : n - j, h = K < n - j - jb ? K : n - j - jb;
        const sap_int need = j + jb + h; /* this step touches columns j .. need - 1 */
        if (need - cb > wc) { /* the final columns cb .. j - 1 out, the live ones to the front */
            FN(blk_copy)(a, n, K, rev, t + ku, ldm, cb, cb, j, 0);
            memmove(t, t + (j - cb) * ldab, sizeof(REAL) * (size_t)((loaded - j) * ldab));
            cb = j;
        }
        if (loaded < need) { /* fill the window: long runs along each diagonal of a */
            const sap_int upto = cb + wc < n ? (sap_int)(cb + wc) : n;
            memset(t + (loaded - cb) * ldab, 0, sizeof(REAL) * (size_t)((upto - loaded) * ldab));
            FN(blk_copy)(a, n, K, rev, t + ku, ldm, cb, loaded, upto, 1);
            loaded = upto;
        }
        REAL *d = M_AT(j, j);
        for (sap_int k = 0; k < jb; k++) {
            REAL piv = d[k + k * ldm];
            if (!(piv >= thr || piv <= -thr)) {
                piv = piv < 0 ? -boost : boost;
                d[k + k * ldm] = piv;
                nboost++;
            }
            const REAL inv = (REAL)1 / piv;
            REAL *restrict lk = d + k * ldm;
            for (sap_int r = k + 1; r < jb; r++) lk[r] *= inv;
            for (sap_int c = k + 1; c < jb; c++) {
                REAL *restrict dc = d + c * ldm;
                const REAL u = dc[k];
                if (u == 0) continue;
                for (sap_int r = k + 1; r < jb; r++) dc[r] -= lk[r] * u;
            }
        }
        if (h > 0) {
            /* L21 = A21 U11^{-1}, U12 = L11^{-1} A12 as products with the inverses (BLAS
             * trsm at these sizes ran at a quarter of gemm's rate) */
            FN(blk_tri_inv)(d, (sap_int)ldm, jb, ui, li);
            FN(blk_mcopy)(h, jb, M_AT(j + jb, j), ldm, xs, h);
            FN(blk_gemm_op)(1, h, jb, jb, xs, h, ui, jb, M_AT(j + jb, j), (sap_int)ldm);
            FN(blk_mcopy)(jb, h, M_AT(j, j + jb), ldm, xs, jb);
            FN(blk_gemm_op)(1, jb, h, jb, li, jb, xs, jb, M_AT(j, j + jb), (sap_int)ldm);
            FN(blk_gemm)(h, h, jb, M_AT(j + jb, j), (sap_int)ldm, M_AT(j, j + jb), (sap_int)ldm, M_AT(j + jb, j + jb),
                         (sap_int)ldm);
        }
    }
    FN(blk_copy)(a, n, K, rev, t + ku, ldm, cb, cb, n, 0);
#undef M_AT
    return nboost;
}

/* UL without pivoting (A = U L, U unit upper with its multipliers above the diagonal, L
 * lower with the pivots on the diagonal) of a w x w band with leading dimension w. */
static sap_int FN(band_ul)(REAL *a, sap_int w, sap_int K, REAL thr, REAL boost, REAL *l, REAL *u)
{
    sap_int nboost = 0;
    REAL *dg = a + K * w;
    for (sap_int k = w - 1; k >= 0; k--) {
        REAL piv = dg[k];
        if (!(piv >= thr || piv <= -thr)) {
            piv = piv < 0 ? -boost : boost;
            dg[k] = piv;
            nboost++;
        }
        const sap_int kk = K < k ? K : k;
        if (kk == 0) continue;
        const REAL inv = (REAL)1 / piv;
        for (sap_int j = 0; j < kk; j++) {
            REAL *p = a + (K + 1 + j) * w + (k - 1 - j); /* a(k-1-j, k) */
            *p *= inv;
            u[j] = *p;
            l[j] = a[(K - 1 - j) * w + k]; /* a(k, k-1-j) */
        }
        /* a(k-1-j, k-1-i) -= u_j l_i, diagonal dd = j - i */
        for (sap_int dd = -(kk - 1); dd <= kk - 1; dd++) {
            const sap_int j0 = dd > 0 ? dd : 0, j1 = kk - 1 + (dd < 0 ? dd : 0);
            REAL *restrict ar = a + (dd + K) * w + (k - 1);
            for (sap_int j = j0; j <= j1; j++) ar[-j] -= u[j] * l[j - dd];
        }
    }
    return nboost;
}

/* Band element (r, c) or 0 outside the band. */
static inline REAL FN(band_at)(const REAL *a, sap_int ld, sap_int K, sap_int r, sap_int c)
{
    sap_int dd = c - r;
    return (dd > K || -dd > K) ? (REAL)0 : a[(dd + K) * ld + r];
}

/* z = A^{-1} z for one LU-factored partition. */
static void FN(band_sweep)(const REAL *a, sap_int nb, sap_int K, REAL *z)
{
    for (sap_int r = 1; r < nb; r++) {
        const sap_int kk = K < r ? K : r;
        REAL s = z[r];
        for (sap_int j = 1; j <= kk; j++) s -= a[(K - j) * nb + r] * z[r - j];
        z[r] = s;
    }
    for (sap_int r = nb - 1; r >= 0; r--) {
        const sap_int kk = K < nb - 1 - r ? K : nb - 1 - r;
        REAL s = z[r];
        for (sap_int j = 1; j <= kk; j++) s -= a[(K + j) * nb + r] * z[r + j];
        z[r] = s / a[K * nb + r];
    }
}

/* The same for k columns of one partition interleaved (z[r k + c]): each factor entry is
 * read once and applied to all k columns, the columns innermost (contiguous, vectorized);
 * per column the operations are those of band_sweep in the same order. */
static void FN(band_sweep_many)(const REAL *a, sap_int nb, sap_int K, sap_int k, REAL *z)
{
    for (sap_int r = 1; r < nb; r++) {
        const sap_int kk = K < r ? K : r;
        REAL *restrict zr = z + (int64_t)r * k;
        for (sap_int j = 1; j <= kk; j++) {
            const REAL l = a[(K - j) * nb + r];
            const REAL *restrict zp = zr - (int64_t)j * k;
            for (sap_int c = 0; c < k; c++) zr[c] -= l * zp[c];
        }
    }
    for (sap_int r = nb - 1; r >= 0; r--) {
        const sap_int kk = K < nb - 1 - r ? K : nb - 1 - r;
        REAL *restrict zr = z + (int64_t)r * k;
        for (sap_int j = 1; j <= kk; j++) {
            const REAL u = a[(K + j) * nb + r];
            const REAL *restrict zp = zr + (int64_t)j * k;
            for (sap_int c = 0; c < k; c++) zr[c] -= u * zp[c];
        }
        const REAL piv = a[K * nb + r];
        for (sap_int c = 0; c < k; c++) zr[c] /= piv;
    }
}

static sap_status FN(band_factor)(sap_band_fact *Fa, sap_int *boosted)
{
    sap_context *ctx = Fa->ctx;
    const sap_band_layout *L = &Fa->L;
    int nt = L->n < 4096 ? 1 : sap__threads(ctx); /* no fork/join for tiny systems */
    sap_int nboost = 0, nfail = 0, nstop = 0;
    const sap_int nwin = Fa->coupled ? L->P : 0;
    const int ulblk = nwin > 0 && Fa->ul_blocked;
    /* blocked: a partition (or window) a thread with one BLAS thread each, or, with fewer
     * partitions than threads, one after the other with the BLAS's threads (the rule
     * cpu_blocked_bytes counts the skewed copies by) */
    int blas_was = 0;
    if ((Fa->blocked || ulblk) && nt > 1) {
        if (L->P < nt) nt = 1;
        else blas_was = sap__blas_threads(1);
    }
    /* the blocked LU's skewed copies: one per thread, counted by the context */
    REAL *bwork = NULL;
    int64_t belems = 0;
    if (Fa->blocked || ulblk) {
        sap_int nmax = 0, kmax = 0; /* (K_i <= n_i - 1: the partitions' own bands) */
        for (sap_int b = 0; b < L->P; b++) {
            const sap_int nb = Fa->blocked ? L->off[b + 1] - L->off[b] : L->w[b]; /* windows: w_b <= n_b */
            if (nb > nmax) nmax = nb;
            if (L->Ki[b] > kmax) kmax = L->Ki[b];
        }
        belems = sap__cpu_blk_elems(nmax, kmax);
        bwork = sap__alloc(ctx, (size_t)nt * (size_t)belems, sizeof(REAL), false, __FILE__, __LINE__);
        if (!bwork) {
            sap__blas_threads_restore(blas_was);
            return SAP_ERR_OUT_OF_MEMORY;
        }
    }
    /* tasks 0..P-1: LU of partition b; P..P+nwin-1: UL of the window of partition b */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(+ : nboost, nfail, nstop)
#endif
    for (sap_int task = 0; task < L->P + nwin; task++) {
        const sap_int b = task < L->P ? task : task - L->P;
        if (task >= L->P && b == 0) continue;
        if (sap__stop_requested(ctx)) { /* a stop: the remaining partitions are skipped */
            nstop++;
            continue;
        }
        const sap_int K = L->Ki[b], nrow = L->off[b + 1] - L->off[b];
        const int blk = task < L->P ? Fa->blocked : ulblk;
#ifdef _OPENMP
        REAL *const tw = bwork ? bwork + (int64_t)omp_get_thread_num() * belems : NULL;
#else
        REAL *const tw = bwork;
#endif
        REAL *work = blk ? NULL : malloc(sizeof(REAL) * (size_t)(2 * K + 2)); /* (blocked: tw) */
        if (!blk && !work) {
            nfail++;
            continue;
        }
        if (task < L->P) {
            REAL *ab = (REAL *)Fa->lu + L->boff[b];
            const REAL thr = (REAL)Fa->thr[b], bst = (REAL)Fa->bst[b];
            const sap_int nb = blk ? FN(band_lu_blocked)(ab, nrow, K, thr, bst, tw, ctx, 0)
                                   : FN(band_lu)(ab, nrow, K, thr, bst, work, work + K + 1, ctx);
            if (nb < 0) nstop++;
            else nboost += nb;
        } else if (blk) {
            const sap_int nb = FN(band_lu_blocked)((REAL *)Fa->ul + Fa->uoff[b], L->w[b], K, (REAL)Fa->thr[b],
                                                   (REAL)Fa->bst[b], tw, ctx, 1);
            if (nb < 0) nstop++;
            else nboost += nb;
        } else
            nboost += FN(band_ul)((REAL *)Fa->ul + Fa->uoff[b], L->w[b], K, (REAL)Fa->thr[b], (REAL)Fa->bst[b], work, work + K + 1);
        free(work);
    }
    (void)nt;
    sap__free(ctx, bwork);
    sap__blas_threads_restore(blas_was);
    if (nfail) return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "band LU: out of memory for work space");
    if (nstop)
        return SAP_ERROR(ctx, SAP_WARN_INTERRUPTED, "band factorization: stopped on request (%lld of %lld blocks left)",
                         (long long)nstop, (long long)(L->P + (nwin > 0 ? nwin - 1 : 0)));
    *boosted += nboost;
    return SAP_OK;
}

/* Dense column-major m x m helpers (ld = m). */

/* B = T^{-1} B for an m x m triangle T (lower or upper, unit diagonal or not) and m
 * columns, column-major (ld m): LAPACK's trsm where linked, else substitution */
static void FN(tri_solve)(int lower, int unit, sap_int m, const REAL *T, REAL *B)
{
#ifdef SAP_HAVE_LAPACK
    const int im = (int)m;
    const REAL one = 1;
    XTRSM("L", lower ? "L" : "U", "N", unit ? "U" : "N", &im, &im, &one, T, &im, B, &im, 1, 1, 1, 1);
#else
    for (sap_int c = 0; c < m; c++) {
        REAL *x = B + c * m;
        if (lower)
            for (sap_int r = 0; r < m; r++) {
                if (!unit) x[r] /= T[r + r * m];
                for (sap_int q = r + 1; q < m; q++) x[q] -= T[q + r * m] * x[r];
            }
        else
            for (sap_int r = m - 1; r >= 0; r--) {
                if (!unit) x[r] /= T[r + r * m];
                for (sap_int q = 0; q < r; q++) x[q] -= T[q + r * m] * x[r];
            }
    }
#endif
}

/* Interface i's spikes through level-3 BLAS (cpu_spikes_blocked): D (m x m work) takes
 * the dense coupling block of partition i's LU (L strictly below the diagonal, U on and
 * above), then of partition i + 1's UL window (U strictly above, L on and below). */
static void FN(spikes_blocked_one)(sap_band_fact *Fa, sap_int i, REAL *D)
{
    const sap_band_layout *L = &Fa->L;
    const sap_int m = L->m[i];
    {
        const sap_int nb = L->off[i + 1] - L->off[i], K = L->Ki[i], s = nb - m;
        const REAL *a = (const REAL *)Fa->lu + L->boff[i];
        REAL *v = (REAL *)Fa->V + L->coff[i];
        for (sap_int c = 0; c < m; c++)
            for (sap_int r = 0; r < m; r++) D[r + c * m] = FN(band_at)(a, nb, K, s + r, s + c);
        memcpy(v, (const REAL *)Fa->B + L->coff[i], sizeof(REAL) * (size_t)(m * m));
        FN(tri_solve)(1, 1, m, D, v); /* L_bb unit lower */
        FN(tri_solve)(0, 0, m, D, v); /* U_bb upper */
    }
    {
        const sap_int b = i + 1, K = L->Ki[b], w = L->w[b];
        const REAL *win = (const REAL *)Fa->ul + Fa->uoff[b];
        REAL *x = (REAL *)Fa->W + L->coff[i];
        for (sap_int c = 0; c < m; c++)
            for (sap_int r = 0; r < m; r++) D[r + c * m] = FN(band_at)(win, w, K, r, c);
        memcpy(x, (const REAL *)Fa->C + L->coff[i], sizeof(REAL) * (size_t)(m * m));
        FN(tri_solve)(0, 1, m, D, x); /* U_tt unit upper */
        FN(tri_solve)(1, 0, m, D, x); /* L_tt lower */
    }
}

static sap_status FN(band_spikes)(sap_band_fact *Fa)
{
    sap_context *ctx = Fa->ctx;
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(ctx); /* no fork/join for tiny systems */
    const REAL *lu = Fa->lu, *Bc = Fa->B, *Cc = Fa->C;
    REAL *V = Fa->V, *W = Fa->W;
    const int blocked = cpu_spikes_blocked(L);
    const int blas_was = blocked && nt > 1 ? sap__blas_threads(1) : 0; /* an interface a thread */
    sap_int nfail = 0;
    SAP_OMP("omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(+ : nfail)")
    for (sap_int i = 0; i < L->P - 1; i++) {
        const sap_int m = L->m[i];
        if (m == 0) continue;
        if (blocked) {
            REAL *D = malloc(sizeof(REAL) * (size_t)m * (size_t)m);
            if (!D) {
                nfail++;
                continue;
            }
            FN(spikes_blocked_one)(Fa, i, D);
            free(D);
            continue;
        }
        /* V_i^(b) = U_bb^{-1} L_bb^{-1} B_i from the bottom-right m x m of the LU of A_i */
        {
            const sap_int nb = L->off[i + 1] - L->off[i], K = L->Ki[i], s = nb - m;
            const REAL *a = lu + L->boff[i];
            REAL *v = V + L->coff[i];
            memcpy(v, Bc + L->coff[i], sizeof(REAL) * (size_t)(m * m));
            for (sap_int col = 0; col < m; col++) {
                REAL *x = v + col * m;
                for (sap_int r = 1; r < m; r++) {
                    REAL acc = x[r];
                    sap_int j0 = r - K > 0 ? r - K : 0;
                    for (sap_int j = j0; j < r; j++) acc -= FN(band_at)(a, nb, K, s + r, s + j) * x[j];
                    x[r] = acc;
                }
                for (sap_int r = m - 1; r >= 0; r--) {
                    REAL acc = x[r];
                    sap_int j1 = r + K < m - 1 ? r + K : m - 1;
                    for (sap_int j = r + 1; j <= j1; j++) acc -= FN(band_at)(a, nb, K, s + r, s + j) * x[j];
                    x[r] = acc / a[K * nb + s + r];
                }
            }
        }
        /* W_{i+1}^(t) = L_tt^{-1} U_tt^{-1} C_{i+1} from the UL of the leading window of A_{i+1} */
        {
            const sap_int b = i + 1, K = L->Ki[b], w = L->w[b];
            const REAL *win = (const REAL *)Fa->ul + Fa->uoff[b];
            REAL *x0 = W + L->coff[i];
            memcpy(x0, Cc + L->coff[i], sizeof(REAL) * (size_t)(m * m));
            for (sap_int col = 0; col < m; col++) {
                REAL *x = x0 + col * m;
                for (sap_int r = m - 2; r >= 0; r--) { /* U_tt unit upper */
                    REAL acc = x[r];
                    sap_int j1 = r + K < m - 1 ? r + K : m - 1;
                    for (sap_int j = r + 1; j <= j1; j++) acc -= FN(band_at)(win, w, K, r, j) * x[j];
                    x[r] = acc;
                }
                for (sap_int r = 0; r < m; r++) { /* L_tt lower with pivots */
                    REAL acc = x[r];
                    sap_int j0 = r - K > 0 ? r - K : 0;
                    for (sap_int j = j0; j < r; j++) acc -= FN(band_at)(win, w, K, r, j) * x[j];
                    x[r] = acc / win[K * w + r];
                }
            }
        }
    }
    (void)nt;
    sap__blas_threads_restore(blas_was);
    if (nfail) return SAP_ERROR(ctx, SAP_ERR_OUT_OF_MEMORY, "band spikes: out of memory for work space");
    return SAP_OK;
}

/* R = I - W V (m x m, column-major): one gemm, or loops */
static void FN(reduced_matrix)(sap_int m, const REAL *w, const REAL *v, REAL *R, int gemm)
{
    for (sap_int c = 0; c < m; c++)
        for (sap_int r = 0; r < m; r++) R[r + c * m] = (REAL)(r == c);
    if (gemm) {
        FN(blk_gemm)(m, m, m, w, m, v, m, R, m);
        return;
    }
    for (sap_int c = 0; c < m; c++) {
        REAL *rc = R + c * m;
        for (sap_int k = 0; k < m; k++) {
            const REAL vk = v[k + c * m];
            if (vk == 0) continue;
            const REAL *wk = w + k * m;
            for (sap_int r = 0; r < m; r++) rc[r] -= wk[r] * vk;
        }
    }
}

static sap_status FN(band_reduced_factor)(sap_band_fact *Fa)
{
    sap_context *ctx = Fa->ctx;
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(ctx); /* no fork/join for tiny systems */
    sap_int nsing = 0;
    const int gemm = cpu_spikes_blocked(L); /* R = I - W V as one gemm where the spikes are BLAS */
    const int blas_was = gemm && nt > 1 ? sap__blas_threads(1) : 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(+ : nsing)
#endif
    for (sap_int i = 0; i < L->P - 1; i++) {
        const sap_int m = L->m[i];
        if (m == 0) continue; /* no coupling (K = 0): V, W and R may be NULL */
        const REAL *v = (const REAL *)Fa->V + L->coff[i], *w = (const REAL *)Fa->W + L->coff[i];
        REAL *R = (REAL *)Fa->R + L->coff[i];
        int32_t *piv = Fa->rpiv + Fa->roff[i];
        FN(reduced_matrix)(m, w, v, R, gemm);
        /* LU with partial pivoting: LAPACK's getrf where the spikes are BLAS (unless it meets an
         * exact zero pivot: then R again and the loop below, which sets such pivots to 1) */
#ifdef SAP_HAVE_LAPACK
        if (gemm) {
            const int im = (int)m;
            int info = 0;
            XGETRF(&im, &im, R, &im, (int *)piv, &info);
            if (info == 0) {
                for (sap_int k = 0; k < m; k++) piv[k] -= 1; /* 1-based to the solve's 0-based */
                continue;
            }
            FN(reduced_matrix)(m, w, v, R, gemm);
        }
#endif
        /* LU with partial pivoting (right-looking, column-major) */
        for (sap_int k = 0; k < m; k++) {
            sap_int p = k;
            REAL best = (REAL)fabs((double)R[k + k * m]);
            for (sap_int r = k + 1; r < m; r++) {
                REAL a = (REAL)fabs((double)R[r + k * m]);
                if (a > best) best = a, p = r;
            }
            piv[k] = (int32_t)p;
            if (p != k)
                for (sap_int c = 0; c < m; c++) {
                    REAL t = R[k + c * m];
                    R[k + c * m] = R[p + c * m];
                    R[p + c * m] = t;
                }
            if (!(best > 0)) {
                nsing++;
                R[k + k * m] = (REAL)1; /* keep going: the preconditioner stays usable */
            }
            const REAL inv = (REAL)1 / R[k + k * m];
            for (sap_int r = k + 1; r < m; r++) R[r + k * m] *= inv;
            for (sap_int c = k + 1; c < m; c++) {
                const REAL ukc = R[k + c * m];
                if (ukc == 0) continue;
                for (sap_int r = k + 1; r < m; r++) R[r + c * m] -= R[r + k * m] * ukc;
            }
        }
    }
    (void)nt;
    sap__blas_threads_restore(blas_was);
    if (nsing) sap__log(ctx, SAP_PRINT_INFO, "band: %lld singular reduced-system pivots set to 1", (long long)nsing);
    return SAP_OK;
}

static sap_status FN(band_block_solve)(sap_band_fact *Fa, sap_int k, const void *rv, void *zv)
{
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(Fa->ctx);
    const REAL *r = rv;
    REAL *z = zv;
    const REAL *lu = Fa->lu;
    if (k == 1) {
        SAP_OMP_FOR_DYNAMIC(nt, 1)
        for (sap_int b = 0; b < L->P; b++) {
            const sap_int o0 = L->off[b], nb = L->off[b + 1] - o0;
            if (z != r) memcpy(z + o0, r + o0, sizeof(REAL) * (size_t)nb);
            FN(band_sweep)(lu + L->boff[b], nb, L->Ki[b], z + o0);
        }
        return SAP_OK;
    }
    /* k columns: each partition's rows of all columns gathered interleaved (row-major
     * nb x k) so that one pass over its factors serves every column */
    const int64_t n = L->n;
    sap_int nfail = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(+ : nfail)
#endif
    for (sap_int b = 0; b < L->P; b++) {
        const sap_int o0 = L->off[b], nb = L->off[b + 1] - o0;
        REAL *t = malloc(sizeof(REAL) * (size_t)nb * (size_t)k);
        if (!t) {
            nfail++;
            continue;
        }
        for (sap_int c = 0; c < k; c++) {
            const REAL *rc = r + c * n + o0;
            for (sap_int i = 0; i < nb; i++) t[(int64_t)i * k + c] = rc[i];
        }
        FN(band_sweep_many)(lu + L->boff[b], nb, L->Ki[b], k, t);
        for (sap_int c = 0; c < k; c++) {
            REAL *zc = z + c * n + o0;
            for (sap_int i = 0; i < nb; i++) zc[i] = t[(int64_t)i * k + c];
        }
        free(t);
    }
    (void)nt;
    if (nfail) return SAP_ERROR(Fa->ctx, SAP_ERR_OUT_OF_MEMORY, "band block solve: out of memory for work space");
    return SAP_OK;
}

/* the columns of an interface one after another, its V, W and R in cache for all of them */
static sap_status FN(band_reduced_solve)(sap_band_fact *Fa, sap_int kc, const void *gv, void *xrv)
{
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(Fa->ctx);
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (sap_int i = 0; i < L->P - 1; i++)
        for (sap_int c = 0; c < kc; c++) {
            const sap_int m = L->m[i], o = L->off[i + 1];
            if (m == 0) continue; /* no coupling: V, W, R and xr may be NULL */
            const REAL *g = (const REAL *)gv + c * L->n;
            const REAL *v = (const REAL *)Fa->V + L->coff[i], *w = (const REAL *)Fa->W + L->coff[i];
            const REAL *R = (const REAL *)Fa->R + L->coff[i];
            const int32_t *piv = Fa->rpiv + Fa->roff[i];
            REAL *xb = (REAL *)xrv + c * Fa->xlen + Fa->xoff[i], *xt = xb + m;
            const REAL *gb = g + o - m, *gt = g + o;
            /* y = gt - W gb */
            for (sap_int r = 0; r < m; r++) xt[r] = gt[r];
            for (sap_int k = 0; k < m; k++) {
                const REAL gk = gb[k];
                for (sap_int r = 0; r < m; r++) xt[r] -= w[r + k * m] * gk;
            }
            /* R xt = y */
            for (sap_int k = 0; k < m; k++)
                if (piv[k] != k) {
                    REAL t = xt[k];
                    xt[k] = xt[piv[k]];
                    xt[piv[k]] = t;
                }
            for (sap_int k = 0; k < m; k++) {
                const REAL xk = xt[k];
                for (sap_int r = k + 1; r < m; r++) xt[r] -= R[r + k * m] * xk;
            }
            for (sap_int k = m - 1; k >= 0; k--) {
                xt[k] /= R[k + k * m];
                const REAL xk = xt[k];
                for (sap_int r = 0; r < k; r++) xt[r] -= R[r + k * m] * xk;
            }
            /* xb = gb - V xt */
            for (sap_int r = 0; r < m; r++) xb[r] = gb[r];
            for (sap_int k = 0; k < m; k++) {
                const REAL xk = xt[k];
                for (sap_int r = 0; r < m; r++) xb[r] -= v[r + k * m] * xk;
            }
        }
    return SAP_OK;
}

static sap_status FN(band_purify)(sap_band_fact *Fa, sap_int kc, const void *rv, void *fv, const void *xrv)
{
    const sap_band_layout *L = &Fa->L;
    const int nt = L->n < 4096 ? 1 : sap__threads(Fa->ctx);
    if (fv != rv) memcpy(fv, rv, sizeof(REAL) * (size_t)L->n * (size_t)kc);
    /* two passes: the bottom rows of partition i (B terms), then the top rows of
     * partition i + 1 (C terms); within a pass every interface writes its own partition */
    for (int pass = 0; pass < 2; pass++) {
        SAP_OMP_FOR_DYNAMIC(nt, 1)
        for (sap_int i = 0; i < L->P - 1; i++)
            for (sap_int c = 0; c < kc; c++) {
                const sap_int m = L->m[i], o = L->off[i + 1];
                if (m == 0) continue; /* no coupling: B, C and xr may be NULL */
                REAL *f = (REAL *)fv + c * L->n;
                const REAL *M = (const REAL *)(pass == 0 ? Fa->B : Fa->C) + L->coff[i];
                const REAL *xb = (const REAL *)xrv + c * Fa->xlen + Fa->xoff[i], *xt = xb + m;
                const REAL *x = pass == 0 ? xt : xb;
                REAL *fr = pass == 0 ? f + o - m : f + o;
                for (sap_int k = 0; k < m; k++) {
                    const REAL a = x[k];
                    for (sap_int q = 0; q < m; q++) fr[q] -= M[q + k * m] * a;
                }
            }
    }
    return SAP_OK;
}

/* lu (and, coupled, B, C and the UL windows) from a double band source in the BAND
 * layout; norms[b] = ||A_b||_inf computed in double as the host path does. */
static sap_status FN(band_fill_from_band)(sap_band_fact *Fa, const sap_band_source *src, double *norms)
{
    const sap_band_layout *L = &Fa->L;
    const sap_int n = L->n, P = L->P, kl = src->kl, sw = src->w;
    const double *s = src->val;
    REAL *lu = Fa->lu;
    const int nt = sap__threads(Fa->ctx);
    (void)nt;
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (sap_int b = 0; b < P; b++) {
        const sap_int o0 = L->off[b], nb = L->off[b + 1] - o0, K = L->Ki[b];
        REAL *a = lu + L->boff[b];
        for (sap_int t = 0; t <= 2 * K; t++) {
            const sap_int q = t - K + kl; /* diagonal j - i = t - K in the source */
            const int have = q >= 0 && q < sw;
            for (sap_int r = 0; r < nb; r++) {
                const sap_int c = r + t - K;
                a[t * nb + r] = (have && c >= 0 && c < nb) ? (REAL)s[(size_t)q * n + o0 + r] : (REAL)0;
            }
        }
        double nrm = 0;
        for (sap_int r = 0; r < nb; r++) {
            double sum = 0;
            for (sap_int t = 0; t <= 2 * K; t++) {
                const sap_int q = t - K + kl, c = r + t - K;
                if (q >= 0 && q < sw && c >= 0 && c < nb) sum += fabs(s[(size_t)q * n + o0 + r]);
            }
            if (sum > nrm) nrm = sum;
        }
        norms[b] = nrm;
    }
    if (!Fa->coupled) return SAP_OK;
    REAL *B = Fa->B, *C = Fa->C, *ul = Fa->ul;
    SAP_OMP_FOR_DYNAMIC(nt, 1)
    for (sap_int i = 0; i < P - 1; i++) {
        /* B_i(a, c) = A(o1 - m + a, o1 + c), C_{i+1}(a, c) = A(o1 + a, o1 - m + c), entries with
         * |j - i| <= K only */
        const sap_int m = L->m[i], o1 = L->off[i + 1];
        for (sap_int c = 0; c < m; c++)
            for (sap_int a = 0; a < m; a++) {
                const sap_int db = c + m - a, qb = db + kl, rb = o1 - m + a;
                B[L->coff[i] + a + c * m] = (db <= L->K && qb < sw) ? (REAL)s[(size_t)qb * n + rb] : (REAL)0;
                const sap_int dc = -(a + m - c), qc = dc + kl, rc = o1 + a;
                C[L->coff[i] + a + c * m] = (-dc <= L->K && qc >= 0) ? (REAL)s[(size_t)qc * n + rc] : (REAL)0;
            }
    }
    SAP_OMP_FOR_DYNAMIC(nt, 4)
    for (sap_int b = 1; b < P; b++) {
        const sap_int nb = L->off[b + 1] - L->off[b], K = L->Ki[b], w = L->w[b];
        const REAL *sb = lu + L->boff[b];
        REAL *dst = ul + Fa->uoff[b];
        for (sap_int t = 0; t <= 2 * K; t++)
            for (sap_int r = 0; r < w; r++) {
                const sap_int c = r + t - K;
                dst[t * w + r] = (c >= 0 && c < w) ? sb[t * nb + r] : (REAL)0;
            }
    }
    return SAP_OK;
}

#include "device/cpu/cpu_template_end.h"
