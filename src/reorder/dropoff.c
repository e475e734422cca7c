/* dropoff.c -- drop-off of small entries far from the diagonal (eq. (13) of the SPIKE::GPU
 * paper) and the band extraction.
 *
 * h[k] = sum of a_ij^2 over the entries with |i - j| = k is one pass over the entries;
 * the smallest K with h[0] + ... + h[K] >= delta * sum_k h[k] is one pass over h.  The
 * total is summed from h in the same order as the prefix, so delta = 1 reaches the
 * total exactly at the last non-zero distance.  The rows are cut into a number of blocks
 * that depends only on the matrix (never on the thread count), each block fills its own
 * histogram sequentially (the threads take blocks) and the histograms are added in block
 * order, so the result is bit-identical for any thread count.
 * The same histogram gives the fraction kept by a given K (sap__drop_kept_fraction). */
#include "reorder/reorder_internal.h"

#include <math.h>
#include <string.h>

/* h[k] (k < *hl) = sum of a_ij^2 over the entries with |i - j| = k, in a new array of the
 * context (the caller frees it). */
static sap_status distance_histogram(const sap_csr *A, double **hout, sap_int *hlout)
{
    sap_context *ctx = A->ctx;
    const sap_int n = A->nrows;
    const sap_int *rp = A->rowptr, *ci = A->colind;
    const double *val = A->val;
    sap_status st = SAP_OK;
    double *h = NULL;
    int nt = sap__threads_for(ctx, (double)A->nnz);
    if (A->nnz < SAP_REORDER_PAR_MIN) nt = 1;
    /* the widest distance decides the histogram length */
    sap_int kmax = 0;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(max : kmax)")
    for (sap_int i = 0; i < n; i++) {
        if (rp[i + 1] == rp[i]) continue;
        sap_int a = i - ci[rp[i]], b = ci[rp[i + 1] - 1] - i;
        sap_int d = a > b ? a : b;
        if (d > kmax) kmax = d;
    }
    const sap_int hl = kmax + 1;
    const sap_int nb = sap__dist_hist_blocks(A, hl); /* sap__csr_scan's blocks */
    const int nt_all = nt;
    if (nt > nb) nt = (int)nb;
    (void)nt;
    SAP_CALLOC(ctx, h, (size_t)hl * (size_t)nb);
    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (sap_int b = 0; b < nb; b++) {
        sap_int r0 = 0, r1 = 0;
        sap__dist_hist_block_rows(A, nb, b, &r0, &r1);
        double *hb = h + (size_t)b * (size_t)hl;
        for (sap_int i = r0; i < r1; i++) {
            for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
                sap_int d = ci[p] > i ? ci[p] - i : i - ci[p];
                hb[d] += val[p] * val[p];
            }
        }
    }
    sap__dist_hist_merge(h, nb, hl, nt_all);
    *hout = h;
    *hlout = hl;
cleanup:
    return st;
}

sap_status sap__drop_hist(const sap_csr *A, double **h, sap_int *hl) { return distance_histogram(A, h, hl); }

sap_status sap__drop_from_hist(sap_context *ctx, const double *h, sap_int hl, double delta, sap_int *K,
                               double *kept_fraction)
{
    double total = 0.0;
    for (sap_int k = 0; k < hl; k++) total += h[k];
    if (!isfinite(total)) return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "drop-off: the squared Frobenius norm is not finite");
    sap_int Kd = 0;
    double kept = 0.0;
    if (total > 0.0) {
        const double target = delta * total;
        double cum = 0.0;
        sap_int k = 0;
        for (; k < hl; k++) {
            cum += h[k];
            if (cum >= target) break;
        }
        if (k >= hl) { /* rounding in delta * total: keep everything */
            k = hl - 1;
            while (k > 0 && h[k] == 0.0) k--;
            cum = total;
        }
        Kd = k;
        kept = cum / total;
    } else {
        kept = 1.0;
    }
    *K = Kd;
    if (kept_fraction) *kept_fraction = kept;
    return SAP_OK;
}

sap_status sap_drop_off(const sap_csr *A, double delta, sap_int *K, double *kept_fraction)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (!K) return SAP_ERROR(ctx, SAP_ERR_INVALID, "K is NULL");
    if (!(delta >= 0.0 && delta <= 1.0))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "drop-off fraction delta = %g outside [0, 1]", delta);
    sap_status st = SAP_OK;
    double *h = NULL;
    sap_int hl = 0;
    SAP_TRY(distance_histogram(A, &h, &hl));
    st = sap__drop_from_hist(ctx, h, hl, delta, K, kept_fraction);
cleanup:
    sap__free(ctx, h);
    return st;
}

double sap__drop_kept_from_hist(const double *h, sap_int hl, sap_int K)
{
    double in = 0.0, all = 0.0;
    for (sap_int k = 0; k < hl; k++) {
        all += h[k];
        if (k <= K) in += h[k];
    }
    return all > 0 ? in / all : 1.0;
}

double sap__drop_kept_in_blocks(const double *h, sap_int hl, sap_int K, double np)
{
    double in = 0.0, all = 0.0;
    for (sap_int k = 0; k < hl; k++) {
        all += h[k];
        if (k <= K && (double)k < np) in += h[k] * (1.0 - (double)k / np);
    }
    return all > 0 ? in / all : 1.0;
}

sap_status sap__drop_kept_fraction(const sap_csr *A, sap_int K, double *fraction)
{
    if (!A || !fraction) return SAP_ERR_INVALID;
    sap_status st = SAP_OK;
    double *h = NULL;
    sap_int hl = 0;
    SAP_TRY(distance_histogram(A, &h, &hl));
    *fraction = sap__drop_kept_from_hist(h, hl, K);
cleanup:
    sap__free(A->ctx, h);
    return st;
}

sap_status sap_csr_band_drop(const sap_csr *A, sap_int K, sap_csr **B)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (!B) return SAP_ERROR(ctx, SAP_ERR_INVALID, "output pointer is NULL");
    *B = NULL;
    if (K < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "band half-width K = %lld is negative", (long long)K);
    const sap_int n = A->nrows;
    const sap_int *rp = A->rowptr, *ci = A->colind;
    sap_status st = SAP_OK;
    sap_int *cnt = NULL;
    sap_csr *C = NULL;
    const int nt = A->nnz > SAP_REORDER_PAR_MIN ? sap__threads(ctx) : 1;
    (void)nt;
    SAP_ALLOC(ctx, cnt, n + 1);
    cnt[0] = 0;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (sap_int i = 0; i < n; i++) {
        sap_int c = 0;
        for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
            sap_int d = ci[p] > i ? ci[p] - i : i - ci[p];
            c += d <= K;
        }
        cnt[i + 1] = c;
    }
    for (sap_int i = 0; i < n; i++) cnt[i + 1] += cnt[i];
    SAP_TRY(sap_csr_create(ctx, n, A->ncols, cnt[n], &C));
    memcpy(C->rowptr, cnt, sizeof(sap_int) * (size_t)(n + 1));
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (sap_int i = 0; i < n; i++) {
        sap_int w = C->rowptr[i];
        for (sap_int p = rp[i]; p < rp[i + 1]; p++) {
            sap_int d = ci[p] > i ? ci[p] - i : i - ci[p];
            if (d <= K) {
                C->colind[w] = ci[p];
                C->val[w] = A->val[p];
                w++;
            }
        }
    }
    *B = C;
    C = NULL;
cleanup:
    sap_csr_destroy(C);
    sap__free(ctx, cnt);
    return st;
}
