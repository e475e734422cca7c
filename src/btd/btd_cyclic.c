/* btd_cyclic.c -- BCYCLIC: block cyclic reduction of a block-tridiagonal segment (Lamas
 * Davina and Roman 2018, section 3.1), factor and solve, written once over the dense
 * kernels of the device table.
 *
 * Level h = 1, 2, 4, ... (while h < m): the rows i = h, 3h, 5h, ... are eliminated, the
 * rows 0, 2h, 4h, ... kept.  For an eliminated row: B_i = LU, [A_i C_i] := B_i^{-1} [A_i C_i]
 * (getrs variants: getrs with 2k right-hand sides; getri variants: B_i^{-1} explicitly, then
 * a gemm).  For a kept row i: B_i -= A_i C^_{i-h} + C_i A^_{i+h}, A_i := -A_i A^_{i-h},
 * C_i := -C_i C^_{i+h}; the kept rows' A|C before the update are saved (history) for the
 * solve.  Every step is one strided batched call over the level's rows (batched variants) or
 * one call per block (non-batched variants).  The last row left (row 0) is factored alone.
 * Solve: the same levels forward on the right-hand side, row 0, then back substitution
 * x_i = z^_i - A^_i x_{i-h} - C^_i x_{i+h} level by level downwards. */
#include "btd/btd_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int batched(const sap_btd *T) { return T->variant == SAP_BTD_GETRS_BATCHED || T->variant == SAP_BTD_GETRI_BATCHED; }
static int use_getri(const sap_btd *T) { return T->variant == SAP_BTD_GETRI_BATCHED || T->variant == SAP_BTD_GETRI; }

/* ---- the kernels, one batched call or one call per block ---------------------------- */

static sap_status x_getrf(const sap_btd *T, int bat, int count, double *a, int64_t sa, int32_t *piv, int64_t sp,
                          int64_t *bad)
{
    if (bat || count <= 1) return T->dk->getrf(T->ctx, (int)T->k, count, a, sa, piv, sp, bad);
    *bad = -1;
    for (int i = 0; i < count; i++) {
        int64_t b1;
        sap_status st = T->dk->getrf(T->ctx, (int)T->k, 1, a + i * sa, 0, piv + i * sp, 0, &b1);
        if (st != SAP_OK) return st;
        if (b1 >= 0 && *bad < 0) *bad = i;
    }
    return SAP_OK;
}

static sap_status x_getrs(const sap_btd *T, int bat, int nrhs, int count, const double *a, int64_t sa,
                          const int32_t *piv, int64_t sp, double *b, int ldb, int64_t sb)
{
    if (bat || count <= 1) return T->dk->getrs(T->ctx, (int)T->k, nrhs, count, a, sa, piv, sp, b, ldb, sb);
    for (int i = 0; i < count; i++) {
        sap_status st = T->dk->getrs(T->ctx, (int)T->k, nrhs, 1, a + i * sa, 0, piv + i * sp, 0, b + i * sb, ldb, 0);
        if (st != SAP_OK) return st;
    }
    return SAP_OK;
}

static sap_status x_getri(const sap_btd *T, int bat, int count, const double *a, int64_t sa, const int32_t *piv,
                          int64_t sp, double *c, int64_t sc)
{
    if (bat || count <= 1) return T->dk->getri(T->ctx, (int)T->k, count, a, sa, piv, sp, c, sc);
    for (int i = 0; i < count; i++) {
        sap_status st = T->dk->getri(T->ctx, (int)T->k, 1, a + i * sa, 0, piv + i * sp, 0, c + i * sc, 0);
        if (st != SAP_OK) return st;
    }
    return SAP_OK;
}

static sap_status x_gemm(const sap_btd *T, int bat, int m, int n, double alpha, const double *a, int lda,
                         int64_t sa, const double *b, int ldb, int64_t sb, double beta, double *c, int ldc,
                         int64_t sc, int count)
{
    int kk = (int)T->k;
    if (bat || count <= 1)
        return T->dk->gemm(T->ctx, m, n, kk, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count);
    for (int i = 0; i < count; i++) {
        sap_status st =
            T->dk->gemm(T->ctx, m, n, kk, alpha, a + i * sa, lda, 0, b + i * sb, ldb, 0, beta, c + i * sc, ldc, 0, 1);
        if (st != SAP_OK) return st;
    }
    return SAP_OK;
}

/* ---- factor ---------------------------------------------------------------------- */

int64_t sap__bc_history(const sap_btd *T, sap_int m)
{
    int64_t blocks = 0;
    for (int64_t h = 1; h < m; h *= 2) blocks += sap__btd_count(0, 2 * h, m);
    return blocks * 2 * T->kk;
}

/* [A_i C_i] := B_i^{-1} [A_i C_i] for the count rows at AC (stride sac), B_i factored at D
 * (stride sd), pivots at piv (stride sp); Binv / W at the same row offsets (getri). */
static sap_status hat_rows(sap_btd *T, int count, double *D, int64_t sd, const int32_t *piv, int64_t sp, double *AC,
                           int64_t sac, double *Binv, double *W)
{
    int k = (int)T->k, bat = batched(T);
    if (!use_getri(T)) return x_getrs(T, bat, 2 * k, count, D, sd, piv, sp, AC, k, sac);
    sap_status st = x_getri(T, bat, count, D, sd, piv, sp, Binv, sd);
    if (st != SAP_OK) return st;
    st = x_gemm(T, bat, k, 2 * k, 1.0, Binv, k, sd, AC, k, sac, 0.0, W, k, sac, count);
    if (st != SAP_OK) return st;
    return T->dk->lacpy(T->ctx, k, 2 * k, count, W, k, sac, AC, k, sac);
}

sap_status sap__bc_factor(sap_btd *T, sap_int o, sap_int m, double *H)
{
    sap_context *ctx = T->ctx;
    const int k = (int)T->k, bat = batched(T);
    const int64_t kk = T->kk;
    double *D = T->D + o * kk, *AC = T->AC + 2 * o * kk;
    double *Binv = T->Binv ? T->Binv + o * kk : NULL, *W = T->W ? T->W + 2 * o * kk : NULL;
    int32_t *piv = T->piv + o * k;
    double *Hl = H;
    int64_t bad;
    sap_status st;
#define BC(x)                                                                                                     \
    do {                                                                                                          \
        if ((st = (x)) != SAP_OK) return st;                                                                      \
    } while (0)
    for (int64_t h = 1; h < m; h *= 2) {
        int nE = sap__btd_count(h, 2 * h, m), nK = sap__btd_count(0, 2 * h, m);
        int nKa = sap__btd_count(2 * h, 2 * h, m), nKc = sap__btd_count(0, 2 * h, m - h);
        BC(x_getrf(T, bat, nE, D + h * kk, 2 * h * kk, piv + h * k, 2 * h * k, &bad));
        if (bad >= 0) {
            T->st.singular_block = o + h + bad * 2 * h;
            return SAP_ERROR(ctx, SAP_ERR_SINGULAR, "sap_btd: diagonal block of block row %lld is singular (level %lld "
                             "of the cyclic reduction)", (long long)T->st.singular_block, (long long)h);
        }
        BC(hat_rows(T, nE, D + h * kk, 2 * h * kk, piv + h * k, 2 * h * k, AC + 2 * h * kk, 4 * h * kk,
                    Binv ? Binv + h * kk : NULL, W ? W + 2 * h * kk : NULL));
        /* history: the kept rows' A|C of this level */
        BC(T->dk->lacpy(ctx, k, 2 * k, nK, AC, k, 4 * h * kk, Hl, k, 2 * kk));
        /* kept i >= 2h: B_i -= A_i C^_{i-h};  A_i := -A_i A^_{i-h} */
        BC(x_gemm(T, bat, k, k, -1.0, Hl + 2 * kk, k, 2 * kk, AC + 2 * h * kk + kk, k, 4 * h * kk, 1.0,
                  D + 2 * h * kk, k, 2 * h * kk, nKa));
        BC(x_gemm(T, bat, k, k, -1.0, Hl + 2 * kk, k, 2 * kk, AC + 2 * h * kk, k, 4 * h * kk, 0.0, AC + 4 * h * kk, k,
                  4 * h * kk, nKa));
        /* kept i with i + h < m: B_i -= C_i A^_{i+h};  C_i := -C_i C^_{i+h} */
        BC(x_gemm(T, bat, k, k, -1.0, Hl + kk, k, 2 * kk, AC + 2 * h * kk, k, 4 * h * kk, 1.0, D, k, 2 * h * kk, nKc));
        BC(x_gemm(T, bat, k, k, -1.0, Hl + kk, k, 2 * kk, AC + 2 * h * kk + kk, k, 4 * h * kk, 0.0, AC + kk, k,
                  4 * h * kk, nKc));
        Hl += (int64_t)nK * 2 * kk;
    }
    BC(T->dk->getrf(ctx, k, 1, D, 0, piv, 0, &bad));
    if (bad >= 0) {
        T->st.singular_block = o;
        return SAP_ERROR(ctx, SAP_ERR_SINGULAR, "sap_btd: diagonal block of block row %lld is singular (last level "
                         "of the cyclic reduction)", (long long)o);
    }
    return SAP_OK;
}

/* ---- solve ----------------------------------------------------------------------- */

sap_status sap__bc_solve(sap_btd *T, sap_int o, sap_int m, const double *H, double *z, int ldz, int nrhs)
{
    sap_context *ctx = T->ctx;
    const int k = (int)T->k, bat = batched(T);
    const int64_t kk = T->kk;
    const double *D = T->D + o * kk, *AC = T->AC + 2 * o * kk;
    const double *Binv = T->Binv ? T->Binv + o * kk : NULL;
    const int32_t *piv = T->piv + o * k;
    const double *Hl = H;
    sap_status st;
    int64_t top = 1;
    while (top < m) top *= 2;
    for (int64_t h = 1; h < m; h *= 2) {
        int nE = sap__btd_count(h, 2 * h, m), nK = sap__btd_count(0, 2 * h, m);
        int nKa = sap__btd_count(2 * h, 2 * h, m);
        /* z^_i = B_i^{-1} z_i for the eliminated rows */
        if (!use_getri(T)) {
            BC(x_getrs(T, bat, nrhs, nE, D + h * kk, 2 * h * kk, piv + h * k, 2 * h * k, z + h * k, ldz, 2 * h * k));
        } else {
            /* Zw has the layout of z (ld ldz) */
            double *w = T->Zw;
            BC(x_gemm(T, bat, k, nrhs, 1.0, Binv + h * kk, k, 2 * h * kk, z + h * k, ldz, 2 * h * k, 0.0, w + h * k,
                      ldz, 2 * h * k, nE));
            BC(T->dk->lacpy(ctx, k, nrhs, nE, w + h * k, ldz, 2 * h * k, z + h * k, ldz, 2 * h * k));
        }
        /* kept rows: z_i -= A_i z^_{i-h} + C_i z^_{i+h} with this level's A_i, C_i */
        BC(x_gemm(T, bat, k, nrhs, -1.0, Hl + 2 * kk, k, 2 * kk, z + h * k, ldz, 2 * h * k, 1.0, z + 2 * h * k, ldz,
                  2 * h * k, nKa));
        BC(x_gemm(T, bat, k, nrhs, -1.0, Hl + kk, k, 2 * kk, z + h * k, ldz, 2 * h * k, 1.0, z, ldz, 2 * h * k, nE));
        Hl += (int64_t)nK * 2 * kk;
    }
    BC(T->dk->getrs(ctx, k, nrhs, 1, D, 0, piv, 0, z, ldz, 0));
    for (int64_t h = top / 2; h >= 1; h /= 2) {
        int nE = sap__btd_count(h, 2 * h, m), nEc = sap__btd_count(h, 2 * h, m - h);
        /* x_i = z^_i - A^_i x_{i-h} - C^_i x_{i+h} */
        BC(x_gemm(T, bat, k, nrhs, -1.0, AC + 2 * h * kk, k, 4 * h * kk, z, ldz, 2 * h * k, 1.0, z + h * k, ldz,
                  2 * h * k, nE));
        BC(x_gemm(T, bat, k, nrhs, -1.0, AC + 2 * h * kk + kk, k, 4 * h * kk, z + 2 * h * k, ldz, 2 * h * k, 1.0,
                  z + h * k, ldz, 2 * h * k, nEc));
    }
    return SAP_OK;
#undef BC
}

/* ---- the automatic variant ------------------------------------------------------- */

/* Times factor-like work of each variant on a small batch of random diagonally dominant
 * blocks on the context's device (the second of two runs), keeps the fastest per block
 * size in the context. */
sap_status sap__bc_choose_variant(sap_btd *T, sap_btd_variant *v, double *seconds)
{
    sap_context *ctx = T->ctx;
    const int k = (int)T->k;
    const int64_t kk = T->kk;
    int64_t key = ((int64_t)1 << 40) | (int64_t)k;
    int cached;
    *seconds = 0.0;
    if (sap__tune_get(ctx, key, &cached)) {
        *v = (sap_btd_variant)cached;
        return SAP_OK;
    }
    double t0 = sap__wtime();
    int cnt = (int)(T->nb / 2 > 8 ? 8 : (T->nb / 2 > 1 ? T->nb / 2 : 2));
    sap_status st = SAP_OK;
    sap_btd_variant save = T->variant;
    double *h = NULL, *dA = NULL, *dF = NULL, *dX = NULL, *dI = NULL, *dO = NULL;
    int32_t *dp = NULL;
    SAP_ALLOC(ctx, h, (size_t)cnt * 3 * kk);
    if (!h) goto cleanup;
    sap_rng rng;
    sap__rng_seed(&rng, 12345);
    for (int64_t i = 0; i < cnt * 3 * kk; i++) h[i] = 2.0 * sap__rng_uniform(&rng) - 1.0;
    for (int b = 0; b < cnt; b++)
        for (int i = 0; i < k; i++) h[b * kk + i + (int64_t)i * k] += k;
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)cnt * kk * 8, (void **)&dA));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)cnt * kk * 8, (void **)&dF));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)cnt * 2 * kk * 8, (void **)&dX));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)cnt * kk * 8, (void **)&dI));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)cnt * 2 * kk * 8, (void **)&dO));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)cnt * k * 4, (void **)&dp));
    SAP_TRY(T->ops->mem_upload(ctx, dA, h, (size_t)cnt * kk * 8));
    SAP_TRY(T->ops->mem_upload(ctx, dX, h + cnt * kk, (size_t)cnt * 2 * kk * 8));
    double best = INFINITY;
    sap_btd_variant bestv = SAP_BTD_GETRS_BATCHED;
    for (int rep = 0; rep < 2; rep++)
        for (int vi = SAP_BTD_GETRS_BATCHED; vi <= SAP_BTD_GETRI; vi++) {
            T->variant = (sap_btd_variant)vi;
            int bat = batched(T);
            int64_t bad;
            SAP_TRY(T->ops->synchronize(ctx));
            double ts = sap__wtime();
            SAP_TRY(T->dk->lacpy(ctx, k, k, cnt, dA, k, kk, dF, k, kk));
            SAP_TRY(x_getrf(T, bat, cnt, dF, kk, dp, k, &bad));
            if (!use_getri(T)) {
                SAP_TRY(x_getrs(T, bat, 2 * k, cnt, dF, kk, dp, k, dX, k, 2 * kk));
            } else {
                SAP_TRY(x_getri(T, bat, cnt, dF, kk, dp, k, dI, kk));
                SAP_TRY(x_gemm(T, bat, k, 2 * k, 1.0, dI, k, kk, dX, k, 2 * kk, 0.0, dO, k, 2 * kk, cnt));
            }
            SAP_TRY(T->ops->synchronize(ctx));
            double t = sap__wtime() - ts;
            if (rep == 1 && t < best) best = t, bestv = (sap_btd_variant)vi;
        }
    T->variant = save;
    *v = bestv;
    sap__tune_put(ctx, key, (int)bestv);
    *seconds = sap__wtime() - t0;
cleanup:
    T->variant = save;
    sap__free(ctx, h);
    T->ops->mem_free(ctx, dA);
    T->ops->mem_free(ctx, dF);
    T->ops->mem_free(ctx, dX);
    T->ops->mem_free(ctx, dI);
    T->ops->mem_free(ctx, dO);
    T->ops->mem_free(ctx, dp);
    return st;
}
