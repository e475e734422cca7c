/* trsv.c -- the host analysis of the triangular solves shared by every backend
 * (trsv_kernels.h): validation, levels (equation 2 of the seed), the level order
 * (equation 3) and the reordered off-diagonal part with the inverse diagonal. */
#include "device/trsv_kernels.h"

#include <math.h>
#include <string.h>

void sap__trsv_host_free(sap_context *ctx, sap_trsv_host *H)
{
    if (!H) return;
    sap__free(ctx, H->level_ptr);
    sap__free(ctx, H->order);
    sap__free(ctx, H->rowptr);
    sap__free(ctx, H->colind);
    sap__free(ctx, H->val);
    sap__free(ctx, H->dinv);
    memset(H, 0, sizeof(*H));
}

sap_status sap__trsv_host_build(sap_context *ctx, const sap_csr *T, int upper, int unit, sap_trsv_host *H)
{
    sap_status st = SAP_OK;
    sap_int *lev = NULL, *cnt = NULL;
    memset(H, 0, sizeof(*H));
    if (!T || T->nrows != T->ncols) return SAP_ERROR(ctx, SAP_ERR_INVALID, "trsv: the factor must be square");
    const sap_int n = T->nrows;
    H->n = n;
    SAP_CALLOC(ctx, lev, n > 0 ? n : 1);
    /* validation and levels: rows in dependency order (upper: the reversal map) */
    sap_int nlevels = 0, noff = 0;
    for (sap_int s = 0; s < n; s++) {
        const sap_int i = upper ? n - 1 - s : s;
        sap_int l = 0;
        int diag = 0;
        for (sap_int p = T->rowptr[i]; p < T->rowptr[i + 1]; p++) {
            const sap_int j = T->colind[p];
            const double v = T->val[p];
            if (!isfinite(v))
                SAP_FAIL(ctx, SAP_ERR_NONFINITE, "trsv: entry (%lld, %lld) is %g", (long long)i, (long long)j, v);
            if (j == i) {
                diag = v != 0.0;
                continue;
            }
            if (upper ? j < i : j > i)
                SAP_FAIL(ctx, SAP_ERR_INVALID, "trsv: entry (%lld, %lld) lies outside the %s triangle", (long long)i,
                         (long long)j, upper ? "upper" : "lower");
            if (lev[j] + 1 > l) l = lev[j] + 1;
            noff++;
        }
        if (!unit && !diag)
            SAP_FAIL(ctx, SAP_ERR_SINGULAR, "trsv: row %lld has a zero or missing diagonal entry", (long long)i);
        lev[i] = l;
        if (l + 1 > nlevels) nlevels = l + 1;
    }
    H->nlevels = nlevels;
    SAP_CALLOC(ctx, cnt, nlevels + 1);
    SAP_ALLOC(ctx, H->level_ptr, nlevels + 1);
    SAP_ALLOC(ctx, H->order, n > 0 ? n : 1);
    SAP_ALLOC(ctx, H->rowptr, n + 1);
    SAP_ALLOC(ctx, H->colind, noff > 0 ? noff : 1);
    SAP_ALLOC(ctx, H->val, noff > 0 ? noff : 1);
    SAP_ALLOC(ctx, H->dinv, n > 0 ? n : 1);
    for (sap_int i = 0; i < n; i++) cnt[lev[i] + 1]++;
    H->level_ptr[0] = 0;
    for (sap_int l = 0; l < nlevels; l++) {
        if (cnt[l + 1] > H->max_level_rows) H->max_level_rows = cnt[l + 1];
        H->level_ptr[l + 1] = H->level_ptr[l] + cnt[l + 1];
        cnt[l + 1] = H->level_ptr[l];
    }
    for (sap_int i = 0; i < n; i++) H->order[cnt[lev[i] + 1]++] = i; /* rows ascending in a level */
    H->rowptr[0] = 0;
    for (sap_int k = 0; k < n; k++) {
        const sap_int i = H->order[k];
        sap_int q = H->rowptr[k];
        double d = 1.0;
        for (sap_int p = T->rowptr[i]; p < T->rowptr[i + 1]; p++) {
            if (T->colind[p] == i) {
                if (!unit) d = T->val[p];
                continue;
            }
            H->colind[q] = T->colind[p];
            H->val[q++] = T->val[p];
        }
        H->rowptr[k + 1] = q;
        H->dinv[k] = 1.0 / d;
    }
cleanup:
    sap__free(ctx, lev);
    sap__free(ctx, cnt);
    if (st < 0) sap__trsv_host_free(ctx, H);
    return st;
}

sap_trsv_method sap__trsv_pick(sap_int n, sap_int nlevels, const char **reason)
{
    if (nlevels <= SAP_TRSV_FEW_LEVELS && n / (nlevels > 0 ? nlevels : 1) >= SAP_TRSV_WIDE_LEVEL) {
        if (reason) *reason = "few wide levels: one parallel step per level";
        return SAP_TRSV_LEVEL;
    }
    if (reason) *reason = "levels many or thin: synchronization-free rows (one launch)";
    return SAP_TRSV_SYNCFREE;
}

const char *sap__trsv_method_name(sap_trsv_method m)
{
    return m == SAP_TRSV_LEVEL ? "level" : m == SAP_TRSV_SYNCFREE ? "syncfree" : "auto";
}
