/* third_stage.c -- the third-stage reordering of SaP: after DB and CM the matrix is split
 * into P diagonal blocks A_i (the first N mod P of size floor(N/P) + 1, the others
 * floor(N/P)) and each block gets its own CM ordering of the pattern of A_i + A_i^T, so
 * each block has its own, usually much smaller, half-bandwidth K_i.
 *
 * The blocks are independent: they are ordered in parallel, each thread with its own CM
 * workspace sized for the largest block (the CM core never allocates).  A block whose
 * CM ordering is not narrower than its current order keeps the identity. */
#include "reorder/reorder_internal.h"

#include <string.h>

sap_status sap_partition_offsets(sap_int n, sap_int P, sap_int *offsets)
{
    if (!offsets || n < 0 || P < 1 || (P > n && !(n == 0 && P == 1))) return SAP_ERR_INVALID;
    sap_int q = n / P, r = n % P;
    offsets[0] = 0;
    for (sap_int b = 0; b < P; b++) offsets[b + 1] = offsets[b] + q + (b < r ? 1 : 0);
    return SAP_OK;
}

sap_status sap_third_stage(const sap_csr *A, sap_int P, int flags, sap_int *perm, sap_int *Ki_before, sap_int *Ki)
{
    if (!A) return SAP_ERR_INVALID;
    sap_context *ctx = A->ctx;
    if (A->nrows != A->ncols)
        return SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "third-stage reordering of a %lld x %lld matrix",
                         (long long)A->nrows, (long long)A->ncols);
    const sap_int n = A->nrows;
    if (P < 1 || (P > n && !(n == 0 && P == 1)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "third stage: P = %lld partitions for N = %lld", (long long)P,
                         (long long)n);
    if (flags < SAP_CM_AUTO || flags > SAP_CM_FORCE_CM)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "unknown Cuthill-McKee flags %d", flags);
    if ((!perm && n > 0) || !Ki) return SAP_ERROR(ctx, SAP_ERR_INVALID, "perm or Ki is NULL");
    sap_status st = SAP_OK;
    sap_int *off = NULL, *kb = NULL;
    sap__cm_work *ws = NULL;
    int nws = 0;
    SAP_ALLOC(ctx, off, P + 1);
    SAP_ALLOC(ctx, kb, P);
    SAP_TRY(sap_partition_offsets(n, P, off));
    sap_int cap_n = 0, cap_e = 0;
    for (sap_int b = 0; b < P; b++) {
        sap_int m = off[b + 1] - off[b], e = A->rowptr[off[b + 1]] - A->rowptr[off[b]];
        if (m > cap_n) cap_n = m;
        if (e > cap_e) cap_e = e;
    }
    int nt = sap__threads(ctx);
    if (nt > P) nt = (int)P;
    if (A->nnz < SAP_REORDER_PAR_MIN) nt = 1;
    SAP_CALLOC(ctx, ws, nt);
    for (; nws < nt; nws++) SAP_TRY(sap__cm_work_create(ctx, cap_n, cap_e, &ws[nws]));

    SAP_OMP("omp parallel for num_threads(nt) schedule(dynamic, 1)")
    for (sap_int b = 0; b < P; b++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        sap__cm_work *w = &ws[t];
        const sap_int s = off[b], e = off[b + 1], m = e - s;
        const sap_int K0 = sap__block_bandwidth(A, s, e);
        sap_int *local = perm + s;
        sap_int K1 = K0;
        if (K0 > 0) {
            sap__cm_build_graph(A, s, e, 1, w);
            sap__cm_result r;
            sap__cm_order(w, m, flags, local, &r);
            K1 = r.bandwidth;
        }
        if (K1 >= K0) {
            K1 = K0;
            for (sap_int k = 0; k < m; k++) local[k] = s + k;
        } else {
            for (sap_int k = 0; k < m; k++) local[k] += s;
        }
        kb[b] = K0;
        Ki[b] = K1;
    }
    if (Ki_before) memcpy(Ki_before, kb, sizeof(sap_int) * (size_t)P);
cleanup:
    for (int t = 0; t < nws; t++) sap__cm_work_free(ctx, &ws[t]);
    sap__free(ctx, ws);
    sap__free(ctx, off);
    sap__free(ctx, kb);
    return st;
}
