/* csr_stats.c -- sap_csr_stats: bandwidths, row statistics, symmetry, diagonal and
 * diagonal dominance, norms.  One parallel pass over the rows (symmetry by binary search
 * of the mirror of each upper entry in its row: no extra memory; a second pass over the
 * lower entries only when some of them lack a mirror) plus the norms of csr_norm.c.  Every
 * reduction is an integer sum, a max or a min, so the result does not depend on the
 * thread count.  A must be canonical (sorted rows). */
#include "base/base.h"
#include "base/csr_search.h"

#include <math.h>
#include <string.h>
/* max / min that propagate NaN whatever the order of their arguments */
static inline double nan_max(double a, double b) { return (a > b || isnan(a)) ? a : b; }
static inline double nan_min(double a, double b) { return (a < b || isnan(a)) ? a : b; }

/* Position of column j in row i (sorted), or -1. */
typedef struct row_acc {
    sap_int lower, upper, empty, max_row, width_sum;
    sap_int zero_diag, dominant, diag_pos, diag_max;
    sap_int n_lower, n_upper, asym_upper, asym_num;
    double dmin, maxdiff;
} row_acc;

static void acc_init(row_acc *a)
{
    memset(a, 0, sizeof(*a));
    a->dmin = INFINITY;
}

static void acc_merge(row_acc *a, const row_acc *b)
{
    if (b->lower > a->lower) a->lower = b->lower;
    if (b->upper > a->upper) a->upper = b->upper;
    if (b->max_row > a->max_row) a->max_row = b->max_row;
    a->empty += b->empty;
    a->width_sum += b->width_sum;
    a->zero_diag += b->zero_diag;
    a->dominant += b->dominant;
    a->diag_pos += b->diag_pos;
    a->diag_max += b->diag_max;
    a->n_lower += b->n_lower;
    a->n_upper += b->n_upper;
    a->asym_upper += b->asym_upper;
    a->asym_num += b->asym_num;
    a->dmin = nan_min(a->dmin, b->dmin);
    a->maxdiff = nan_max(a->maxdiff, b->maxdiff);
}

static void stats_row(const sap_csr *A, sap_int i, sap_int ndiag, int square, row_acc *a)
{
    const sap_int *ap = A->rowptr, *ai = A->colind;
    const double *ax = A->val;
    const sap_int b = ap[i], e = ap[i + 1], len = e - b;
    if (len > a->max_row) a->max_row = len;
    if (len == 0) a->empty++;
    else {
        sap_int first = ai[b], last = ai[e - 1];
        a->width_sum += last - first + 1;
        if (i - first > a->lower) a->lower = i - first;
        if (last - i > a->upper) a->upper = last - i;
    }
    if (i < ndiag) {
        double diag = 0.0, off = 0.0, offmax = 0.0;
        int has = 0;
        for (sap_int p = b; p < e; p++) {
            if (ai[p] == i) {
                diag = ax[p];
                has = 1;
            } else {
                off += fabs(ax[p]);
                offmax = nan_max(offmax, fabs(ax[p]));
            }
        }
        if (!has || diag == 0.0) a->zero_diag++;
        if (has && diag > 0.0) a->diag_pos++;
        double ad = fabs(diag);
        if (ad > 0.0 && ad >= offmax) a->diag_max++; /* (false for a NaN on either side) */
        double r = off == 0.0 ? INFINITY : ad / off;
        a->dmin = nan_min(a->dmin, r);
        if (ad >= off) a->dominant++;
    }
    if (square) {
        /* the diagonal, and every upper entry against its mirror; lower entries are only
         * counted here (those without a mirror are handled by lower_unmatched_row) */
        for (sap_int p = b; p < e; p++) {
            sap_int j = ai[p];
            double diff;
            if (j < i) {
                a->n_lower++;
                continue;
            }
            if (j == i) {
                diff = ax[p] - ax[p]; /* 0, or NaN for a NaN diagonal */
            } else {
                a->n_upper++;
                sap_int q = sap__csr_find(ap, ai, j, i);
                if (q < 0) {
                    a->asym_upper++;
                    diff = fabs(ax[p]);
                } else {
                    diff = fabs(ax[p] - ax[q]);
                }
            }
            if (!(diff == 0.0)) a->asym_num++;
            a->maxdiff = nan_max(a->maxdiff, diff);
        }
    }
}

/* Lower entries of row i whose mirror is not stored (second pass, only when some exist). */
static void lower_unmatched_row(const sap_csr *A, sap_int i, row_acc *a)
{
    const sap_int *ap = A->rowptr, *ai = A->colind;
    const double *ax = A->val;
    for (sap_int p = ap[i]; p < ap[i + 1] && ai[p] < i; p++) {
        if (sap__csr_find(ap, ai, ai[p], i) >= 0) continue;
        double diff = fabs(ax[p]);
        if (!(diff == 0.0)) a->asym_num++;
        a->maxdiff = nan_max(a->maxdiff, diff);
    }
}

/* The first pass over the rows, on nt threads (symmetry counts when square). */
static void row_pass(const sap_csr *A, sap_int ndiag, int square, int nt, row_acc *tot)
{
    const sap_int n = A->nrows;
    (void)nt;
    acc_init(tot);
    SAP_OMP("omp parallel num_threads(nt)")
    {
        row_acc loc;
        acc_init(&loc);
        SAP_OMP("omp for schedule(dynamic, 1024) nowait")
        for (sap_int i = 0; i < n; i++) stats_row(A, i, ndiag, square, &loc);
        SAP_OMP("omp critical(sap_stats_combine)")
        acc_merge(tot, &loc);
    }
}

/* The fields both statistics take from the row pass. */
static void fill_common(sap_matrix_stats *s, const row_acc *tot, sap_int n, sap_int m, sap_int nnz)
{
    s->nrows = n;
    s->ncols = m;
    s->nnz = nnz;
    s->lower_bandwidth = tot->lower;
    s->upper_bandwidth = tot->upper;
    s->half_bandwidth = tot->lower > tot->upper ? tot->lower : tot->upper;
    s->empty_rows = tot->empty;
    s->max_row_nnz = tot->max_row;
    s->mean_row_nnz = n > 0 ? (double)nnz / (double)n : 0.0;
    s->mean_row_width = n > 0 ? (double)tot->width_sum / (double)n : 0.0;
    s->zero_diagonal = tot->zero_diag;
    s->diag_dominance = tot->dmin;
    s->dominant_rows = tot->dominant;
}

sap_status sap_csr_stats(const sap_csr *A, sap_matrix_stats *stats)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (!stats) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_stats: stats is NULL");
    if (A->nrows < 0 || A->ncols < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_csr_stats: malformed CSR argument");

    sap_matrix_stats s;
    memset(&s, 0, sizeof(s));
    const sap_int n = A->nrows, m = A->ncols, nnz = A->rowptr[n];
    const int square = n == m;
    const sap_int ndiag = n < m ? n : m;
    sap_status st = SAP_OK;
    SAP_TRY(sap_csr_norm(A, SAP_NORM_ONE, &s.norm_one));
    SAP_TRY(sap_csr_norm(A, SAP_NORM_INF, &s.norm_inf));
    SAP_TRY(sap_csr_norm(A, SAP_NORM_FRO, &s.norm_fro));
    SAP_TRY(sap_csr_norm(A, SAP_NORM_MAX, &s.norm_max));

    row_acc tot;
    int nt = sap__threads_for(ctx, (double)(nnz + n));
    row_pass(A, ndiag, square, nt, &tot);
    /* lower entries with a mirror = upper entries with a mirror */
    const sap_int lower_unmatched = tot.n_lower - (tot.n_upper - tot.asym_upper);
    if (square && lower_unmatched > 0) {
        SAP_OMP("omp parallel num_threads(nt)")
        {
            row_acc loc;
            acc_init(&loc);
            SAP_OMP("omp for schedule(dynamic, 1024) nowait")
            for (sap_int i = 0; i < n; i++) lower_unmatched_row(A, i, &loc);
            SAP_OMP("omp critical(sap_stats_combine)")
            acc_merge(&tot, &loc);
        }
    }

    fill_common(&s, &tot, n, m, nnz);
    s.structurally_symmetric = square && tot.asym_upper == 0 && lower_unmatched == 0;
    s.numerically_symmetric = square && tot.asym_num == 0;
    s.symmetry_deviation = !square || tot.maxdiff == 0.0 ? 0.0 : tot.maxdiff / s.norm_max;
    s.spd_estimate = s.numerically_symmetric && tot.diag_pos == n;
    *stats = s;
cleanup:
    return st;
}

int sap__csr_numerically_symmetric(const sap_csr *A, int nt)
{
    const sap_int n = A->nrows;
    int asym = 0;
    /* most matrices that are not symmetric show it in their first rows: those serially,
     * before any thread is woken */
    sap_int i0 = 0;
    for (int64_t w = 0; i0 < n && w < SAP_PAR_MIN_WORK; i0++) {
        if (!sap__csr_row_symmetric(A->rowptr, A->colind, A->val, i0)) return 0;
        w += A->rowptr[i0 + 1] - A->rowptr[i0] + 1;
    }
    nt = sap__threads_cap(nt, (double)(A->nnz + n));
    (void)nt;
    /* a shared flag stops the other threads at the first asymmetric row */
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1024)")
    for (sap_int i = i0; i < n; i++) {
        int stop;
        SAP_OMP("omp atomic read")
        stop = asym;
        if (stop) continue;
        if (!sap__csr_row_symmetric(A->rowptr, A->colind, A->val, i)) {
            SAP_OMP("omp atomic write")
            asym = 1;
        }
    }
    return !asym;
}

sap_status sap__csr_stats_quick(const sap_csr *A, sap_matrix_stats *stats)
{
    if (!A || !stats) return SAP_ERR_INVALID;
    sap_matrix_stats s;
    memset(&s, 0, sizeof(s));
    const sap_int n = A->nrows, m = A->ncols, nnz = A->rowptr[n];
    const int square = n == m;
    const sap_int ndiag = n < m ? n : m;
    row_acc tot;
    int nt = sap__threads_for(A->ctx, (double)(nnz + n));
    row_pass(A, ndiag, 0, nt, &tot);
    /* symmetry only where it can make the SPD guess (every diagonal entry positive) */
    int sym = square && tot.diag_pos == n;
    if (sym) sym = sap__csr_numerically_symmetric(A, nt);
    fill_common(&s, &tot, n, m, nnz);
    s.numerically_symmetric = sym;
    s.spd_estimate = sym;
    *stats = s;
    return SAP_OK;
}

/* ---- the distance histogram's blocks, the fused scan ---------------------------------- */

#define SCAN_HIST_WIDE 8       /* sap__csr_scan's histogram only for kmax <= n / this */
#define HIST_BLOCKS 64         /* at most this many blocks ... */
#define HIST_BLOCK_WORK 200000 /* ... of at least this many entries */

sap_int sap__dist_hist_blocks(const sap_csr *A, sap_int hl)
{
    const sap_int n = A->nrows;
    sap_int nb = A->nnz / HIST_BLOCK_WORK;
    if (nb > HIST_BLOCKS) nb = HIST_BLOCKS;
    if (hl > 0 && nb > A->nnz / hl) nb = A->nnz / hl;
    if (nb > n) nb = n;
    return nb < 1 ? 1 : nb;
}

void sap__dist_hist_merge(double *h, sap_int nb, sap_int hl, int nt)
{
    if (nb < 2) return;
    if ((double)nb * (double)hl < 1e6) nt = 1;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (sap_int k = 0; k < hl; k++) {
        double v = h[k];
        for (sap_int b = 1; b < nb; b++) v += h[(size_t)b * (size_t)hl + k];
        h[k] = v;
    }
}

void sap__dist_hist_block_rows(const sap_csr *A, sap_int nb, sap_int b, sap_int *r0, sap_int *r1)
{
    const sap_int *rp = A->rowptr, n = A->nrows;
    const int64_t work = (int64_t)rp[n] + n;
    /* rows of about equal work (entries + rows): a function of the matrix and nb only */
    *r0 = b == 0 ? 0 : sap__split_rows(rp, n, (sap_int)(work * b / nb));
    *r1 = b == nb - 1 ? n : sap__split_rows(rp, n, (sap_int)(work * (b + 1) / nb));
}

sap_status sap__csr_scan(sap_context *ctx, const sap_csr *A, int with_hist, sap_csr_scan *out)
{
    if (!ctx || !A || !out) return SAP_ERR_INVALID;
    memset(out, 0, sizeof(*out));
    const sap_int n = A->nrows, m = A->ncols, nnz = A->rowptr[n];
    const sap_int *rp = A->rowptr, *ci = A->colind;
    const double *val = A->val;
    sap_status st = SAP_OK;
    int nt = sap__threads_for(ctx, (double)(nnz + n));
    /* the histogram's length from the rows' end entries (valid rows: their extremes; an
     * invalid row is reported, and its entries beyond hl are not counted) */
    sap_int kmax = 0;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(max : kmax)")
    for (sap_int i = 0; i < n; i++) {
        if (rp[i + 1] == rp[i]) continue;
        const sap_int a = i - ci[rp[i]], b = ci[rp[i + 1] - 1] - i;
        const sap_int d = a > b ? a : b;
        if (d > kmax) kmax = d;
    }
    const sap_int hl = kmax + 1;
    sap_int nb = sap__dist_hist_blocks(A, hl);
    /* the histogram only where its blocks still spread over the threads, the columns may be
     * valid and the band is not wide (kmax <= n / SCAN_HIST_WIDE; else the solver makes it
     * later, by sap_drop_off, for the matrix it keeps: a band that wide is reordered by CM,
     * and the input's histogram (scattered over n distances in each block) is never used;
     * gen:synthetic N = 200,000: ~60 of create's 100 ms on 16 cores) */
    const sap_int nb0 = sap__dist_hist_blocks(A, 0);
    int hist = with_hist && n == m && kmax < m && kmax <= n / SCAN_HIST_WIDE && (nb >= nb0 || nb >= nt);
    if (!hist) {
        nb = (nnz + n) / HIST_BLOCK_WORK;
        if (nb < 4 * (sap_int)nt) nb = 4 * (sap_int)nt;
        if (nb > n) nb = n;
        if (nb < 1) nb = 1;
    }
    double *h = NULL;
    row_acc *acc = NULL;
    if (hist) SAP_CALLOC(ctx, h, (size_t)hl * (size_t)nb);
    SAP_ALLOC(ctx, acc, nb);
    sap_int bad_row = n, bad_entry = nnz;
    const sap_int ndiag = n < m ? n : m;
    if (nt > nb) nt = (int)nb;
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(min : bad_row, bad_entry)")
    for (sap_int b = 0; b < nb; b++) {
        sap_int r0 = 0, r1 = 0;
        if (hist) {
            sap__dist_hist_block_rows(A, nb, b, &r0, &r1);
        } else {
            r0 = (sap_int)((int64_t)n * b / nb);
            r1 = (sap_int)((int64_t)n * (b + 1) / nb);
        }
        double *hb = hist ? h + (size_t)b * (size_t)hl : NULL;
        row_acc *a = &acc[b];
        acc_init(a);
        for (sap_int i = r0; i < r1; i++) {
            const sap_int p0 = rp[i], p1 = rp[i + 1];
            int ok = 1;
            for (sap_int p = p0; p < p1; p++) {
                const sap_int j = ci[p];
                const double v = val[p];
                if (j < 0 || j >= m || (p > p0 && ci[p - 1] >= j)) ok = 0;
                if (!isfinite(v) && p < bad_entry) bad_entry = p;
                if (hb) {
                    const sap_int d = j > i ? j - i : i - j;
                    if (d < hl) hb[d] += v * v;
                }
            }
            if (!ok && i < bad_row) bad_row = i;
            stats_row(A, i, ndiag, 0, a);
        }
    }
    row_acc tot;
    acc_init(&tot);
    for (sap_int b = 0; b < nb; b++) acc_merge(&tot, &acc[b]);
    fill_common(&out->stats, &tot, n, m, nnz);
    out->diag_positive = n == m && tot.diag_pos == n;
    out->diag_row_max = n == m && tot.diag_max == n;
    out->bad_row = bad_row;
    out->bad_entry = bad_entry;
    if (hist && bad_row == n) {
        sap__dist_hist_merge(h, nb, hl, nt);
        out->hist = h;
        out->hist_len = hl;
        h = NULL;
    }
cleanup:
    sap__free(ctx, h);
    sap__free(ctx, acc);
    return st;
}
