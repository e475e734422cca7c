/* spmv_auto.c -- the automatic SpMV format: a choice from the row-length statistics of
 * the matrix (mean, spread, longest row, padding each padded format would need, size)
 * and the backend.  The thresholds come from bench/spmv on an H200 (bench/results/spmv.md):
 * see the comments at each rule. */
#include "device/device.h"

#include <math.h>

typedef struct row_stats {
    sap_int n, nnz, max_len, long_rows;
    double mean, sd;
    double sellp_fill; /* SELL-P slots / nnz */
    double ell_fill;   /* ELL slots / nnz */
} row_stats;

static void compute_stats(const sap_csr *A, row_stats *s)
{
    const sap_int n = A->nrows;
    s->n = n;
    s->nnz = A->nnz;
    s->max_len = 0;
    s->long_rows = 0;
    s->mean = n > 0 ? (double)A->nnz / (double)n : 0.0;
    double ss = 0.0, slots = 0.0;
    for (sap_int s0 = 0; s0 < n; s0 += SAP_SELLP_SLICE) {
        sap_int s1 = s0 + SAP_SELLP_SLICE < n ? s0 + SAP_SELLP_SLICE : n, w = 0;
        for (sap_int i = s0; i < s1; i++) {
            sap_int len = A->rowptr[i + 1] - A->rowptr[i];
            double d = (double)len - s->mean;
            ss += d * d;
            if (len > w) w = len;
        }
        w = (w + SAP_SELLP_PAD - 1) / SAP_SELLP_PAD * SAP_SELLP_PAD;
        slots += (double)w * SAP_SELLP_SLICE;
        if (w > s->max_len) s->max_len = w;
    }
    s->sd = n > 0 ? sqrt(ss / (double)n) : 0.0;
    double thr = 4.0 * s->mean + 32.0;
    for (sap_int i = 0; i < n; i++)
        if ((double)(A->rowptr[i + 1] - A->rowptr[i]) > thr) s->long_rows++;
    s->sellp_fill = A->nnz > 0 ? slots / (double)A->nnz : 1.0;
    s->ell_fill = A->nnz > 0 ? (double)n * (double)s->max_len / (double)A->nnz : 1.0;
}

sap_spmv_format sap__spmv_auto_format(const sap_csr *A, sap_backend backend, const char **reason)
{
    const char *why = "";
    sap_spmv_format f = SAP_FORMAT_CSR;
    if (!A || backend != SAP_BACKEND_CUDA) {
        why = "cpu backend: CSR (row-parallel, no padding) is the fastest format on the CPU";
        goto out;
    }
    if (A->nrows == 0 || A->nnz == 0) {
        why = "empty matrix: CSR";
        goto out;
    }
    row_stats s;
    compute_stats(A, &s);
    {
        /* a mostly full band: the values alone, no column indices (8 instead of 12 bytes
         * per entry in double, coalesced x); bench/banded's systems are dense bands */
        sap_int kl = 0, ku = 0;
        sap__csr_lower_upper(A, 1, &kl, &ku);
        if ((double)A->nrows * (double)(kl + ku + 1) <= (double)A->nnz / 0.7) {
            why = "dense band (>= 70% of the band's slots hold entries): BAND, no column indices";
            f = SAP_FORMAT_BAND;
            goto out;
        }
    }
    /* bench/spmv on an H200 (bench/results/spmv.md): below ~50k rows every single-launch
     * kernel takes 3.5-4.5 us, launch-bound, about half of cuSPARSE's time; SELL-P is the
     * fastest on large regular matrices (3D Poisson 160^3: 1.6x cuSPARSE, G3_circuit
     * 1.5x); padded formats lose badly once a few rows are long (HEC, whose remainder
     * needs a second launch, included), where the binned CSR kernel (long rows get a
     * block each in the same launch) wins. */
    if (s.nnz < 4096) {
        why = "small matrix (< 4096 entries, launch-bound): adaptive CSR, one launch";
        f = SAP_FORMAT_CSR;
    } else if (s.mean > 48.0) {
        why = "long rows (mean > 48 entries): adaptive CSR, a warp per row";
        f = SAP_FORMAT_CSR;
    } else if (s.sellp_fill <= 1.25) {
        why = "regular rows (SELL-P padding <= 25%): SELL-P, coalesced 32-row slices";
        f = SAP_FORMAT_SELLP;
    } else if (s.long_rows > 0) {
        why = "a few long rows: adaptive CSR, long rows get a block each in the same launch (faster than HEC)";
        f = SAP_FORMAT_CSR;
    } else {
        why = "irregular row lengths (SELL-P padding > 25%): adaptive CSR";
        f = SAP_FORMAT_CSR;
    }
out:
    if (reason) *reason = why;
    return f;
}
