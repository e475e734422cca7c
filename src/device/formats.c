/* formats.c -- host-side conversions from CSR to the padded SpMV formats (ELL, SELL-P,
 * HEC) in the layouts of sap_backend.h, and the choice of the HEC width.  The cpu backend
 * uses them directly; they are the reference the device conversions are tested against.
 *
 * Conventions (all formats):
 *  - column indices are 32-bit: ncols > INT32_MAX gives SAP_ERR_TOO_LARGE;
 *  - entries of a row keep their CSR order (k-th stored entry of row i goes to slot k);
 *  - padding slots hold column min(i, ncols - 1) (0 when ncols = 0) and value 0, where i
 *    is the row's index (for the SELL-P rows past nrows in the last slice: that index
 *    clamped the same way). */
#include "device/device.h"

#include <string.h>

static sap_status check_cols(sap_context *ctx, const sap_csr *A)
{
    if (A->ncols > INT32_MAX)
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "%lld columns do not fit the 32-bit indices of the padded formats",
                         (long long)A->ncols);
    return SAP_OK;
}

static inline int32_t pad_col(sap_int i, sap_int ncols)
{
    if (ncols <= 0) return 0;
    return (int32_t)(i < ncols - 1 ? i : ncols - 1);
}

static sap_int max_row(const sap_int *rowptr, sap_int nrows)
{
    sap_int m = 0;
    for (sap_int i = 0; i < nrows; i++)
        if (rowptr[i + 1] - rowptr[i] > m) m = rowptr[i + 1] - rowptr[i];
    return m;
}

/* HEC width.  Storing row i costs w slots in the ELL part plus 2 per entry spilled to the
 * CSR part (an entry of the CSR part moves the same bytes but is read less efficiently
 * and needs the extra pass over the row pointers), so we minimise
 *     C(w) = nrows * w + 2 * sum_i max(0, len_i - w).
 * C is convex with C(w+1) - C(w) = nrows - 2 * #{i : len_i > w}: the minimiser is the
 * smallest w with at most half of the rows longer than w, i.e. the (upper) median row
 * length.  Regular matrices (every row of about the same length) go entirely to the ELL
 * part; a few long rows go to the CSR part instead of padding every row.  Found by a
 * binary search over w (no allocation: log2(max row) passes over the row pointers). */
sap_int sap__hec_width(const sap_int *rowptr, sap_int nrows)
{
    if (nrows <= 0 || !rowptr) return 0;
    sap_int lo = 0, hi = max_row(rowptr, nrows);
    while (lo < hi) {
        sap_int w = lo + (hi - lo) / 2, longer = 0;
        for (sap_int i = 0; i < nrows; i++) longer += rowptr[i + 1] - rowptr[i] > w;
        if (2 * longer <= nrows) hi = w;
        else lo = w + 1;
    }
    return lo;
}

void sap__ell_free(sap_context *ctx, sap_ell_host *E)
{
    if (!E) return;
    sap__free(ctx, E->col);
    sap__free(ctx, E->val);
    memset(E, 0, sizeof(*E));
}

/* ELL with the given width; width < 0 takes the longest row.  Rows longer than the width
 * keep their first 'width' entries (HEC stores the rest in its CSR part). */
sap_status sap__ell_from_csr(sap_context *ctx, const sap_csr *A, sap_int width, sap_ell_host *E)
{
    if (!A || !E) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap__ell_from_csr: NULL argument");
    memset(E, 0, sizeof(*E));
    sap_status st = check_cols(ctx, A);
    if (st < 0) return st;
    const sap_int n = A->nrows;
    if (width < 0) width = max_row(A->rowptr, n);
    if (sap__mul_overflows(n, width, INT64_MAX / 16))
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "ELL of %lld rows x width %lld is too large", (long long)n,
                         (long long)width);
    E->nrows = n;
    E->width = width;
    SAP_ALLOC(ctx, E->col, n * width);
    SAP_ALLOC(ctx, E->val, n * width);
    for (sap_int i = 0; i < n; i++) {
        const sap_int p0 = A->rowptr[i], len = A->rowptr[i + 1] - p0;
        const int32_t pc = pad_col(i, A->ncols);
        for (sap_int k = 0; k < width; k++) {
            if (k < len) {
                E->col[i + k * n] = (int32_t)A->colind[p0 + k];
                E->val[i + k * n] = A->val[p0 + k];
            } else {
                E->col[i + k * n] = pc;
                E->val[i + k * n] = 0.0;
            }
        }
    }
    return SAP_OK;
cleanup:
    sap__ell_free(ctx, E);
    return st;
}

void sap__sellp_free(sap_context *ctx, sap_sellp_host *S)
{
    if (!S) return;
    sap__free(ctx, S->slice_ptr);
    sap__free(ctx, S->slice_width);
    sap__free(ctx, S->col);
    sap__free(ctx, S->val);
    memset(S, 0, sizeof(*S));
}

sap_status sap__sellp_from_csr(sap_context *ctx, const sap_csr *A, sap_sellp_host *S)
{
    if (!A || !S) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap__sellp_from_csr: NULL argument");
    memset(S, 0, sizeof(*S));
    sap_status st = check_cols(ctx, A);
    if (st < 0) return st;
    const sap_int n = A->nrows, ns = (n + SAP_SELLP_SLICE - 1) / SAP_SELLP_SLICE;
    S->nrows = n;
    S->nslices = ns;
    SAP_ALLOC(ctx, S->slice_ptr, ns + 1);
    SAP_ALLOC(ctx, S->slice_width, ns);
    S->slice_ptr[0] = 0;
    for (sap_int s = 0; s < ns; s++) {
        sap_int w = 0;
        for (sap_int i = s * SAP_SELLP_SLICE; i < n && i < (s + 1) * SAP_SELLP_SLICE; i++)
            if (A->rowptr[i + 1] - A->rowptr[i] > w) w = A->rowptr[i + 1] - A->rowptr[i];
        w = (w + SAP_SELLP_PAD - 1) / SAP_SELLP_PAD * SAP_SELLP_PAD;
        S->slice_width[s] = w;
        if (S->slice_ptr[s] > INT64_MAX / 16 - w * SAP_SELLP_SLICE)
            SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "SELL-P storage overflows");
        S->slice_ptr[s + 1] = S->slice_ptr[s] + w * SAP_SELLP_SLICE;
    }
    SAP_ALLOC(ctx, S->col, S->slice_ptr[ns]);
    SAP_ALLOC(ctx, S->val, S->slice_ptr[ns]);
    for (sap_int s = 0; s < ns; s++) {
        const sap_int base = S->slice_ptr[s], w = S->slice_width[s];
        for (sap_int r = 0; r < SAP_SELLP_SLICE; r++) {
            const sap_int i = s * SAP_SELLP_SLICE + r;
            const sap_int p0 = i < n ? A->rowptr[i] : 0, len = i < n ? A->rowptr[i + 1] - p0 : 0;
            const int32_t pc = pad_col(i, A->ncols);
            for (sap_int k = 0; k < w; k++) {
                const sap_int q = base + r + k * SAP_SELLP_SLICE;
                if (k < len) {
                    S->col[q] = (int32_t)A->colind[p0 + k];
                    S->val[q] = A->val[p0 + k];
                } else {
                    S->col[q] = pc;
                    S->val[q] = 0.0;
                }
            }
        }
    }
    return SAP_OK;
cleanup:
    sap__sellp_free(ctx, S);
    return st;
}

void sap__hec_free(sap_context *ctx, sap_hec_host *H)
{
    if (!H) return;
    sap__ell_free(ctx, &H->ell);
    sap__free(ctx, H->csr_rowptr);
    sap__free(ctx, H->csr_col);
    sap__free(ctx, H->csr_val);
    memset(H, 0, sizeof(*H));
}

sap_status sap__hec_from_csr(sap_context *ctx, const sap_csr *A, sap_hec_host *H)
{
    if (!A || !H) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap__hec_from_csr: NULL argument");
    memset(H, 0, sizeof(*H));
    sap_status st = SAP_OK;
    const sap_int n = A->nrows, w = sap__hec_width(A->rowptr, n);
    SAP_TRY(sap__ell_from_csr(ctx, A, w, &H->ell));
    SAP_ALLOC(ctx, H->csr_rowptr, n + 1);
    H->csr_rowptr[0] = 0;
    for (sap_int i = 0; i < n; i++) {
        sap_int len = A->rowptr[i + 1] - A->rowptr[i];
        H->csr_rowptr[i + 1] = H->csr_rowptr[i] + (len > w ? len - w : 0);
    }
    SAP_ALLOC(ctx, H->csr_col, H->csr_rowptr[n]);
    SAP_ALLOC(ctx, H->csr_val, H->csr_rowptr[n]);
    for (sap_int i = 0; i < n; i++) {
        sap_int q = H->csr_rowptr[i];
        for (sap_int p = A->rowptr[i] + w; p < A->rowptr[i + 1]; p++, q++) {
            H->csr_col[q] = (int32_t)A->colind[p];
            H->csr_val[q] = A->val[p];
        }
    }
    return SAP_OK;
cleanup:
    sap__hec_free(ctx, H);
    return st;
}

/* ---- BAND (dense band, DIA) ---------------------------------------------------------------- */

sap_status sap__band_dims(sap_context *ctx, const sap_csr *A, sap_int *kl_out, sap_int *ku_out, int64_t *slots)
{
    sap_status st = check_cols(ctx, A);
    if (st < 0) return st;
    const sap_int n = A->nrows;
    sap_int kl = 0, ku = 0;
    sap__csr_lower_upper(A, sap__threads(ctx), &kl, &ku);
    if (sap__mul_overflows(kl + ku + 1, n > 0 ? n : 1, SAP_NNZ_MAX))
        return SAP_ERROR(ctx, SAP_ERR_TOO_LARGE, "band format: %lld rows x %lld diagonals overflow", (long long)n,
                         (long long)(kl + ku + 1));
    *kl_out = kl;
    *ku_out = ku;
    *slots = (int64_t)n * (int64_t)(kl + ku + 1);
    return SAP_OK;
}

void sap__band_fill_rows(sap_context *ctx, const sap_csr *A, sap_int kl, sap_int ku, sap_precision prec, sap_int i0,
                         sap_int i1, int64_t ld, void *val)
{
    const int nt = (int64_t)(i1 - i0) * (kl + ku + 1) < SAP_PAR_MIN_WORK ? 1 : sap__threads(ctx);
    /* blocks of B rows, at least 4 per thread (a chunk of a streamed upload of a wide band
     * has only a few thousand rows: 256-row blocks left half the threads idle), 16 to 256 */
    sap_int B = (i1 - i0) / (4 * (sap_int)nt);
    B = B < 16 ? 16 : B > 256 ? 256 : B;
    const sap_int w = kl + ku + 1, nb = (i1 - i0 + B - 1) / B;
    const size_t es = prec == SAP_DOUBLE ? sizeof(double) : sizeof(float);
    const sap_int *rp = A->rowptr, *ci = A->colind;
    const double *av = A->val;
    /* a sparse band: each thread zeroes the (contiguous) slots of its rows on every
     * diagonal, then scatters the rows' entries.  A dense one (at least half its slots
     * stored) in blocks of rows too few for a memset to pay (runs of < BAND_FILL_RUN
     * bytes: the wide bands, whose staging chunks hold few rows): every slot written once,
     * zeros in the gaps, by tiles of BAND_FILL_TILE diagonals so that the rows of a block
     * write the same pages one after another.  Measured: N = 50,000, K = 1,500 (16-row
     * blocks, 128-byte runs) on an H100 host's 16 cores T_Dtransf 0.104 -> 0.077 s; but
     * N = 200,000, K = 200 (81-row blocks, 648-byte runs) 0.033 -> 0.053 s, so long runs
     * keep the memset (its stores need no read of the line first); a sparse band's strided
     * zeros were 2.5x slower than the memset.  A row found out of order sends its block to
     * the memset way, which takes any order. */
#define BAND_FILL_TILE 512
#define BAND_FILL_RUN 256
#define BAND_PUT(q, x)                                                                                                 \
    do {                                                                                                               \
        if (prec == SAP_DOUBLE) ((double *)val)[q] = (x);                                                              \
        else ((float *)val)[q] = (float)(x);                                                                           \
    } while (0)
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (sap_int b = 0; b < nb; b++) {
        const sap_int r0 = i0 + b * B, r1 = r0 + B < i1 ? r0 + B : i1;
        int sparse = 2.0 * (double)(rp[r1] - rp[r0]) < (double)(r1 - r0) * (double)w ||
                     (size_t)(r1 - r0) * es >= BAND_FILL_RUN;
        if (!sparse) {
            sap_int cur[256]; /* B <= 256: each row's next entry */
            for (sap_int i = r0; i < r1; i++) cur[i - r0] = rp[i];
            for (sap_int t0 = 0; t0 < w && !sparse; t0 += BAND_FILL_TILE) {
                const sap_int t1 = t0 + BAND_FILL_TILE < w ? t0 + BAND_FILL_TILE : w;
                for (sap_int i = r0; i < r1; i++) {
                    const size_t o = (size_t)(i - i0);
                    sap_int p = cur[i - r0], t = t0;
                    for (; p < rp[i + 1]; p++) {
                        const sap_int sl = ci[p] - i + kl;
                        if (sl >= t1) break;
                        sparse |= sl < t; /* a row out of order (or a repeated column): below */
                        for (; t < sl; t++) BAND_PUT((size_t)t * (size_t)ld + o, 0.0);
                        BAND_PUT((size_t)sl * (size_t)ld + o, av[p]);
                        t = sl + 1;
                    }
                    for (; t < t1; t++) BAND_PUT((size_t)t * (size_t)ld + o, 0.0);
                    cur[i - r0] = p;
                }
            }
        }
        if (sparse) {
            for (sap_int t = 0; t < w; t++)
                memset((char *)val + ((size_t)t * (size_t)ld + (size_t)(r0 - i0)) * es, 0, (size_t)(r1 - r0) * es);
            for (sap_int i = r0; i < r1; i++)
                for (sap_int p = rp[i]; p < rp[i + 1]; p++)
                    BAND_PUT((size_t)(ci[p] - i + kl) * (size_t)ld + (size_t)(i - i0), av[p]);
        }
    }
#undef BAND_PUT
#undef BAND_FILL_TILE
#undef BAND_FILL_RUN
}

void sap__band_fill_values(sap_context *ctx, const sap_csr *A, sap_int kl, sap_int ku, sap_precision prec, void *val)
{
    sap__band_fill_rows(ctx, A, kl, ku, prec, 0, A->nrows, A->nrows, val);
}

void sap__par_memcpy(sap_context *ctx, void *dst, const void *src, size_t bytes)
{
    const size_t chunk = (size_t)1 << 22;
    const int64_t nc = (int64_t)((bytes + chunk - 1) / chunk);
    const int nt = nc < 4 ? 1 : sap__threads(ctx);
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (int64_t c = 0; c < nc; c++) {
        const size_t o = (size_t)c * chunk, len = bytes - o < chunk ? bytes - o : chunk;
        memcpy((char *)dst + o, (const char *)src + o, len);
    }
}

int64_t sap__conv_colind32(sap_context *ctx, const sap_int *colind, sap_int ncols, int64_t k0, int64_t k1,
                             int32_t *buf)
{
    const int nt = sap__threads_for(ctx, (double)(k1 - k0));
    int64_t bad = INT64_MAX;
    (void)nt;
    SAP_OMP("omp parallel for num_threads(nt) schedule(static) reduction(min : bad)")
    for (int64_t k = k0; k < k1; k++) {
        const sap_int c = colind[k];
        const int out = c < 0 || c >= ncols;
        buf[k - k0] = out ? 0 : (int32_t)c;
        if (out && k < bad) bad = k;
    }
    return bad == INT64_MAX ? -1 : bad;
}

void sap__conv_values(sap_context *ctx, const double *val, sap_precision prec, int64_t k0, int64_t k1, void *buf)
{
    const int64_t m = k1 - k0;
    const int nt = sap__threads_for(ctx, (double)m);
    if (prec == SAP_DOUBLE) { /* nt contiguous pieces */
        SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
        for (int t = 0; t < nt; t++) {
            const int64_t a = m * t / nt, b = m * (t + 1) / nt;
            memcpy((double *)buf + a, val + k0 + a, sizeof(double) * (size_t)(b - a));
        }
        return;
    }
    SAP_OMP("omp parallel for num_threads(nt) schedule(static)")
    for (int64_t k = 0; k < m; k++) ((float *)buf)[k] = (float)val[k0 + k];
}
