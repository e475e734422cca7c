/* stats_cpu.c -- the csr_stats op of the cpu backend (device.h): the statistics, checks and
 * inverse diagonal of a CSR in backend memory (host arrays here), computed per row as the
 * cuda kernels do (each row on its own, the symmetry by a binary search of each entry's
 * mirror), so that it is the reference the cuda op is tested against; the tests compare it
 * with sap__csr_stats_quick and sap_csr_check.  Integer counts, min and max: the result does
 * not depend on the thread count. */
#include "base/csr_search.h"
#include "device/cpu/cpu_internal.h"

#include <math.h>
#include <string.h>

typedef struct stat_acc {
    sap_int lower, upper, empty, max_row, width_sum, zero_diag, dominant, diag_pos;
    sap_int bad_col, bad_order, nonfinite, zero_diag_row;
    double dmin;
} stat_acc;

static void acc_init(stat_acc *a, sap_int n, sap_int nnz)
{
    memset(a, 0, sizeof(*a));
    a->bad_col = a->bad_order = a->zero_diag_row = n;
    a->nonfinite = nnz;
    a->dmin = INFINITY;
}

static sap_int imax(sap_int a, sap_int b) { return a > b ? a : b; }
static sap_int imin(sap_int a, sap_int b) { return a < b ? a : b; }

static void acc_merge(stat_acc *a, const stat_acc *b)
{
    a->lower = imax(a->lower, b->lower);
    a->upper = imax(a->upper, b->upper);
    a->max_row = imax(a->max_row, b->max_row);
    a->empty += b->empty;
    a->width_sum += b->width_sum;
    a->zero_diag += b->zero_diag;
    a->dominant += b->dominant;
    a->diag_pos += b->diag_pos;
    a->bad_col = imin(a->bad_col, b->bad_col);
    a->bad_order = imin(a->bad_order, b->bad_order);
    a->nonfinite = imin(a->nonfinite, b->nonfinite);
    a->zero_diag_row = imin(a->zero_diag_row, b->zero_diag_row);
    if (b->dmin < a->dmin) a->dmin = b->dmin;
}

/* Row i: the checks first (a bad column leaves the rest of the row unread). */
static void row_stats(const sap_dev_csr *A, sap_int i, double *dinv, stat_acc *a)
{
    const sap_int b = A->rowptr[i], e = A->rowptr[i + 1], n = A->n;
    const sap_int len = e - b;
    double diag = 0.0, off = 0.0;
    int has = 0;
    for (sap_int p = b; p < e; p++) {
        const sap_int j = A->colind[p];
        if (j < 0 || j >= n) {
            a->bad_col = imin(a->bad_col, i);
            if (dinv) dinv[i] = 0.0;
            return;
        }
        if (p > b && A->colind[p - 1] >= j) a->bad_order = imin(a->bad_order, i);
        const double v = A->val[p];
        if (!isfinite(v)) a->nonfinite = imin(a->nonfinite, p);
        if (j == i) {
            diag = v;
            has = 1;
        } else {
            off += fabs(v);
        }
    }
    a->max_row = imax(a->max_row, len);
    if (len == 0) a->empty++;
    else {
        const sap_int first = A->colind[b], last = A->colind[e - 1];
        a->width_sum += last - first + 1;
        a->lower = imax(a->lower, i - first);
        a->upper = imax(a->upper, last - i);
    }
    if (!has || diag == 0.0) {
        a->zero_diag++;
        a->zero_diag_row = imin(a->zero_diag_row, i);
    }
    if (has && diag > 0.0) a->diag_pos++;
    const double ad = fabs(diag), r = off == 0.0 ? INFINITY : ad / off;
    if (r < a->dmin) a->dmin = r;
    if (ad >= off) a->dominant++;
    if (dinv) dinv[i] = has && diag != 0.0 ? 1.0 / diag : 0.0;
}

sap_status sap__cpu_csr_stats(sap_context *ctx, const sap_dev_csr *A, sap_dev_csr_check *chk, sap_matrix_stats *ms,
                              double *dinv)
{
    if (!A || !chk || A->n < 0 || A->nnz < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "csr_stats: malformed CSR argument");
    const sap_int n = A->n, nnz = A->nnz;
    chk->bad_rowptr = chk->bad_col = chk->bad_order = chk->nonfinite = chk->zero_diag_row = -1;
    if (A->rowptr[0] != 0 || A->rowptr[n] != nnz) {
        chk->bad_rowptr = n;
        return SAP_OK;
    }
    for (sap_int i = 0; i < n; i++)
        if (A->rowptr[i + 1] < A->rowptr[i]) {
            chk->bad_rowptr = i;
            return SAP_OK;
        }
    int nt = sap__threads_for(ctx, (double)(nnz + n));
    (void)nt;
    stat_acc tot;
    acc_init(&tot, n, nnz);
    SAP_OMP("omp parallel num_threads(nt)")
    {
        stat_acc loc;
        acc_init(&loc, n, nnz);
        SAP_OMP("omp for schedule(dynamic, 1024) nowait")
        for (sap_int i = 0; i < n; i++) row_stats(A, i, dinv, &loc);
        SAP_OMP("omp critical(sap_cpu_csr_stats)")
        acc_merge(&tot, &loc);
    }
    chk->bad_col = tot.bad_col < n ? tot.bad_col : -1;
    chk->bad_order = tot.bad_order < n ? tot.bad_order : -1;
    chk->nonfinite = tot.nonfinite < nnz ? tot.nonfinite : -1;
    chk->zero_diag_row = tot.zero_diag_row < n ? tot.zero_diag_row : -1;
    if (!ms || chk->bad_col >= 0 || chk->bad_order >= 0) return SAP_OK;
    int sym = tot.diag_pos == n;
    if (sym) {
        sap_int asym = 0;
        SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1024) reduction(+ : asym)")
        for (sap_int i = 0; i < n; i++) asym += !sap__csr_row_symmetric(A->rowptr, A->colind, A->val, i);
        sym = asym == 0;
    }
    memset(ms, 0, sizeof(*ms));
    ms->nrows = ms->ncols = n;
    ms->nnz = nnz;
    ms->lower_bandwidth = tot.lower;
    ms->upper_bandwidth = tot.upper;
    ms->half_bandwidth = imax(tot.lower, tot.upper);
    ms->empty_rows = tot.empty;
    ms->max_row_nnz = tot.max_row;
    ms->mean_row_nnz = n > 0 ? (double)nnz / (double)n : 0.0;
    ms->mean_row_width = n > 0 ? (double)tot.width_sum / (double)n : 0.0;
    ms->zero_diagonal = tot.zero_diag;
    ms->diag_dominance = tot.dmin;
    ms->dominant_rows = tot.dominant;
    ms->numerically_symmetric = sym;
    ms->spd_estimate = sym;
    return SAP_OK;
}
