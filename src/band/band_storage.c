/* band_storage.c -- partition layout of a banded matrix and conversion from CSR into the
 * tall-and-thin band storage plus coupling blocks (band_impl.h describes the layout). */
#include "band/band_impl.h"
#include "base/csr_search.h"

#include <math.h>
#include <string.h>

void sap__band_layout_free(sap_context *ctx, sap_band_layout *L)
{
    if (!L) return;
    sap__free(ctx, L->off);
    sap__free(ctx, L->Ki);
    sap__free(ctx, L->boff);
    sap__free(ctx, L->m);
    sap__free(ctx, L->coff);
    sap__free(ctx, L->w);
    memset(L, 0, sizeof(*L));
}

sap_status sap__band_layout_create(sap_context *ctx, const sap_csr *A, sap_int P, sap_int K_cap, sap_int K_known,
                                   int sorted, sap_int *dropped, sap_band_layout *L)
{
    sap_status st = SAP_OK;
    memset(L, 0, sizeof(*L));
    const sap_int n = A->nrows;
    if (P < 1 || P > (n > 0 ? n : 1))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "band: %lld partitions for %lld rows (need 1 <= P <= N)", (long long)P,
                         (long long)n);
    L->n = n;
    L->P = P;
    SAP_ALLOC(ctx, L->off, P + 1);
    SAP_CALLOC(ctx, L->Ki, P);
    SAP_ALLOC(ctx, L->boff, P + 1);
    SAP_CALLOC(ctx, L->m, P);
    SAP_ALLOC(ctx, L->coff, P + 1);
    SAP_CALLOC(ctx, L->w, P);
    SAP_TRY(sap_partition_offsets(n, P, L->off));
    /* K_i: the widest entry of diagonal block i (rows are sorted) */
    const int nt = sap__threads(ctx);
    sap_int Kmax = 0, nskip = 0, nbad = 0;
    const int count = dropped != NULL;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt) reduction(+ : nskip, nbad)
#endif
    for (sap_int b = 0; b < P; b++) {
        sap_int kb = 0;
        if (sorted) { /* the kept entries of row r are one run [lo, hi) of its sorted columns */
            const sap_int c0 = L->off[b], c1 = L->off[b + 1];
            for (sap_int r = c0; r < c1; r++) {
                const sap_int p0 = A->rowptr[r], p1 = A->rowptr[r + 1];
                sap_int a = c0, e = c1; /* kept columns: [a, e) */
                if (K_cap > 0 && r - K_cap > a) a = r - K_cap;
                if (K_cap > 0 && r + K_cap + 1 < e) e = r + K_cap + 1;
                const sap_int lo = sap__lower_bound(A->colind, p0, p1, a), hi = sap__lower_bound(A->colind, lo, p1, e);
                nskip += (p1 - p0) - (hi - lo);
                if (hi > lo) {
                    const sap_int d0 = r - A->colind[lo], d1 = A->colind[hi - 1] - r;
                    const sap_int dd = d0 > d1 ? d0 : d1;
                    if (dd > kb) kb = dd;
                }
            }
            L->Ki[b] = kb;
            continue;
        }
        for (sap_int r = L->off[b]; r < L->off[b + 1]; r++)
            for (sap_int p = A->rowptr[r]; p < A->rowptr[r + 1]; p++) {
                if (count && !isfinite(A->val[p])) nbad++;
                sap_int c = A->colind[p];
                if (c < L->off[b] || c >= L->off[b + 1]) {
                    nskip++;
                    continue;
                }
                sap_int dd = c > r ? c - r : r - c;
                if (K_cap > 0 && dd > K_cap) {
                    nskip++;
                    continue;
                }
                if (dd > kb) kb = dd;
            }
        L->Ki[b] = kb;
    }
    if (dropped) *dropped = nskip;
    if (nbad) SAP_FAIL(ctx, SAP_ERR_NONFINITE, "band: the matrix has %lld NaN/Inf entries", (long long)nbad);
    /* K: the half-bandwidth of the whole matrix (capped) */
    if (K_known >= 0) {
        Kmax = K_known;
    } else {
        sap_int kl = 0, ku = 0;
        sap__csr_lower_upper(A, nt, &kl, &ku);
        Kmax = kl > ku ? kl : ku;
    }
    if (K_cap > 0 && Kmax > K_cap) Kmax = K_cap;
    L->K = Kmax;
    L->boff[0] = 0;
    L->coff[0] = 0;
    for (sap_int b = 0; b < P; b++) {
        sap_int nb = L->off[b + 1] - L->off[b];
        if (sap__mul_overflows(2 * L->Ki[b] + 1, nb, INT64_MAX / 16 - L->boff[b]))
            SAP_FAIL(ctx, SAP_ERR_TOO_LARGE, "band: storage of partition %lld overflows", (long long)b);
        L->boff[b + 1] = L->boff[b] + (2 * L->Ki[b] + 1) * nb;
        sap_int m = 0;
        if (b + 1 < P) {
            sap_int nb1 = L->off[b + 2] - L->off[b + 1];
            m = Kmax < nb ? Kmax : nb;
            if (nb1 < m) m = nb1;
        }
        L->m[b] = m;
        L->coff[b + 1] = L->coff[b] + m * m;
        /* UL window of partition b (for W_b^(t)): the coupling rows plus 3 K_b more */
        if (b > 0) {
            sap_int kb = L->Ki[b] > 0 ? L->Ki[b] : 1;
            sap_int w = L->m[b - 1] + 3 * kb;
            L->w[b] = w < nb ? w : nb;
        }
    }
    return SAP_OK;
cleanup:
    sap__band_layout_free(ctx, L);
    return st;
}

sap_status sap__band_fill(sap_context *ctx, const sap_csr *A, const sap_band_layout *L, double *band, double *B,
                          double *C, int coupled, sap_int *dropped)
{
    const sap_int n = L->n, P = L->P;
    const int nt = sap__threads(ctx);
    sap_int ndrop = 0, nbad = 0;
    const int cpl = band ? B != NULL : coupled;
    if (band) {
        SAP_OMP_FOR(nt)
        for (sap_int b = 0; b < P; b++)
            memset(band + L->boff[b], 0, (size_t)(L->boff[b + 1] - L->boff[b]) * sizeof(double));
    }
    if (band && B && P > 1) {
        memset(B, 0, (size_t)L->coff[P - 1] * sizeof(double));
        memset(C, 0, (size_t)L->coff[P - 1] * sizeof(double));
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt) reduction(+ : ndrop, nbad)
#endif
    for (sap_int b = 0; b < P; b++) {
        const sap_int o0 = L->off[b], o1 = L->off[b + 1], nb = o1 - o0, K = L->Ki[b];
        double *a = band ? band + L->boff[b] : NULL;
        for (sap_int r = o0; r < o1; r++)
            for (sap_int p = A->rowptr[r]; p < A->rowptr[r + 1]; p++) {
                const sap_int c = A->colind[p];
                const double v = A->val[p];
                if (!isfinite(v)) nbad++;
                if (c >= o0 && c < o1) {
                    sap_int dd = c - r;
                    if (dd > K || -dd > K) ndrop++;
                    else if (a) a[(dd + K) * nb + (r - o0)] = v;
                } else if (cpl && c >= o1 && b + 1 < P) {
                    /* B_b: rows o1 - m .. o1 - 1, columns o1 .. o1 + m - 1 */
                    const sap_int m = L->m[b];
                    if (r >= o1 - m && c < o1 + m && c - r <= L->K) {
                        if (B) B[L->coff[b] + (r - (o1 - m)) + (c - o1) * m] = v;
                    } else ndrop++;
                } else if (cpl && c < o0 && b > 0) {
                    /* C_b: rows o0 .. o0 + m - 1, columns o0 - m .. o0 - 1 (m of interface b-1) */
                    const sap_int m = L->m[b - 1];
                    if (r < o0 + m && c >= o0 - m && r - c <= L->K) {
                        if (C) C[L->coff[b - 1] + (r - o0) + (c - (o0 - m)) * m] = v;
                    } else ndrop++;
                } else {
                    ndrop++;
                }
            }
    }
    (void)n;
    if (dropped) *dropped = ndrop;
    if (nbad) return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "band: the matrix has %lld NaN/Inf entries", (long long)nbad);
    return SAP_OK;
}

void sap__band_shape(const sap_csr *A, int nt, sap_int *K, double *d)
{
    sap_int k = 0;
    double dmin = INFINITY;
    nt = sap__threads_cap(nt, (double)(A->nnz + A->nrows));
    (void)nt;
    SAP_OMP("omp parallel for schedule(static) num_threads(nt) reduction(min : dmin) reduction(max : k)")
    for (sap_int r = 0; r < A->nrows; r++) {
        double diag = 0, off = 0;
        for (sap_int p = A->rowptr[r]; p < A->rowptr[r + 1]; p++) {
            sap_int c = A->colind[p], dd = c > r ? c - r : r - c;
            if (dd > k) k = dd;
            if (c == r) diag += fabs(A->val[p]);
            else off += fabs(A->val[p]);
        }
        if (off > 0 && diag / off < dmin) dmin = diag / off;
    }
    *K = k;
    *d = dmin;
}
