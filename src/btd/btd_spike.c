/* btd_spike.c -- Spike for block-tridiagonal matrices (Lamas Davina and Roman 2018,
 * section 3.2), written once over the dense kernels of the device table.
 *
 * The nb block rows are cut into P partitions (each >= 2 block rows).  Partition r's
 * diagonal part E_r is factored by BCYCLIC (btd_cyclic.c) once its coupling blocks (the
 * last row's C, the next partition's first row's A) are copied out; the spikes
 * V_r = E_r^{-1} [0; C] and W_r = E_r^{-1} [A; 0] are solved with k right-hand sides each.
 * Exact Spike: the reduced system of the partitions' top and bottom unknowns is itself
 * block tridiagonal (block 2k, P rows: A'_r = [0 W_r^t; 0 W_r^b], B'_r = I,
 * C'_r = [V_r^t 0; V_r^b 0]) and is solved by BCYCLIC.  Reduced (truncated) Spike drops
 * V_r^t and W_r^b: the reduced system splits into one 2k x 2k system [I V_r^b; W_{r+1}^t I]
 * per interface, factored in one batched getrf.  The solve is g = E^{-1} b, the reduced
 * solve, then x_r = g_r - V_r x^t_{r+1} - W_r x^b_{r-1}. */
#include "btd/btd_impl.h"

#include <string.h>

void sap__spike_free(sap_btd *T)
{
    sap_context *ctx = T->ctx;
    double *arrays[] = {T->V, T->Wsp, T->Cc, T->Ac, T->R, T->Y};
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) T->ops->mem_free(ctx, arrays[i]);
    T->ops->mem_free(ctx, T->rpiv);
    T->V = T->Wsp = T->Cc = T->Ac = T->R = T->Y = NULL;
    T->rpiv = NULL;
    T->ycap = 0;
    sap_btd_destroy(T->red);
    T->red = NULL;
    sap__free(ctx, T->po);
    T->po = NULL;
}

static sap_status spike_alloc(sap_btd *T, sap_int P)
{
    sap_context *ctx = T->ctx;
    sap_status st = SAP_OK;
    const sap_int k = T->k, nb = T->nb, n = k * nb;
    const int64_t kk = T->kk;
    double *I = NULL;
    T->P = P;
    SAP_ALLOC(ctx, T->po, (size_t)P + 1);
    if (!T->po) goto cleanup;
    sap_int q = nb / P, rem = nb % P;
    for (sap_int r = 0; r <= P; r++) T->po[r] = r * q + (r < rem ? r : rem);
    int64_t hb = 0;
    for (sap_int r = 0; r < P; r++) hb += sap__bc_history(T, T->po[r + 1] - T->po[r]);
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)(hb > 0 ? hb : 1) * 8, (void **)&T->H));
    if (P == 1) return SAP_OK;
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)(n * k) * 8, (void **)&T->V));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)(n * k) * 8, (void **)&T->Wsp));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)(P * kk) * 8, (void **)&T->Cc));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)(P * kk) * 8, (void **)&T->Ac));
    SAP_TRY(T->ops->mem_alloc(ctx, (size_t)kk * 8, (void **)&T->eye));
    SAP_CALLOC(ctx, I, (size_t)kk);
    if (!I) goto cleanup;
    for (sap_int i = 0; i < k; i++) I[i + i * k] = 1.0;
    SAP_TRY(T->ops->mem_upload(ctx, T->eye, I, (size_t)kk * 8));
    if (T->algo == SAP_BTD_SPIKE) {
        sap_btd_options o;
        sap_btd_options_init(&o);
        o.algo = SAP_BTD_BCYCLIC;
        o.variant = T->variant;
        SAP_TRY(sap__btd_alloc(ctx, 2 * k, P, &o, &T->red));
    } else {
        SAP_TRY(T->ops->mem_alloc(ctx, (size_t)((P - 1) * 4 * kk) * 8, (void **)&T->R));
        SAP_TRY(T->ops->mem_alloc(ctx, (size_t)((P - 1) * 2 * k) * 4, (void **)&T->rpiv));
    }
cleanup:
    sap__free(ctx, I);
    return st;
}

sap_status sap__spike_factor(sap_btd *T)
{
    sap_context *ctx = T->ctx;
    sap_status st = SAP_OK;
    const sap_dense_kernels *dk = T->dk;
    const int k = (int)T->k;
    const int64_t kk = T->kk;
    if (!T->po) {
        sap_int P = T->opt.partitions > 0 ? T->opt.partitions : 4;
        if (P > T->nb / 2) P = T->nb / 2;
        if (P < 1) P = 1;
        SAP_TRY(spike_alloc(T, P));
    }
    const sap_int P = T->P, *po = T->po;
    /* the coupling blocks leave the partitions */
    for (sap_int r = 0; r + 1 < P; r++) {
        double *Cl = T->AC + 2 * (po[r + 1] - 1) * kk + kk, *Af = T->AC + 2 * po[r + 1] * kk;
        SAP_TRY(dk->lacpy(ctx, k, k, 1, Cl, k, 0, T->Cc + r * kk, k, 0));
        SAP_TRY(dk->lacpy(ctx, k, k, 1, Af, k, 0, T->Ac + (r + 1) * kk, k, 0));
        SAP_TRY(dk->zero(ctx, k, k, 1, Cl, k, 0));
        SAP_TRY(dk->zero(ctx, k, k, 1, Af, k, 0));
    }
    double *Hr = T->H;
    for (sap_int r = 0; r < P; r++) {
        sap_int nr = po[r + 1] - po[r];
        SAP_TRY(sap__bc_factor(T, po[r], nr, Hr));
        Hr += sap__bc_history(T, nr);
    }
    if (P == 1) return SAP_OK;
    /* spikes (the getri variants' solves use Zw with the spikes' layout) */
    SAP_TRY(sap__btd_reserve(T, T->k * T->nb * T->k));
    Hr = T->H;
    for (sap_int r = 0; r < P; r++) {
        sap_int nr = po[r + 1] - po[r];
        int ldv = (int)(nr * k);
        double *Vr = T->V + po[r] * kk, *Wr = T->Wsp + po[r] * kk;
        if (r + 1 < P) {
            SAP_TRY(dk->zero(ctx, ldv, k, 1, Vr, ldv, 0));
            SAP_TRY(dk->lacpy(ctx, k, k, 1, T->Cc + r * kk, k, 0, Vr + (nr - 1) * k, ldv, 0));
            SAP_TRY(sap__bc_solve(T, po[r], nr, Hr, Vr, ldv, k));
        }
        if (r > 0) {
            SAP_TRY(dk->zero(ctx, ldv, k, 1, Wr, ldv, 0));
            SAP_TRY(dk->lacpy(ctx, k, k, 1, T->Ac + r * kk, k, 0, Wr, ldv, 0));
            SAP_TRY(sap__bc_solve(T, po[r], nr, Hr, Wr, ldv, k));
        }
        Hr += sap__bc_history(T, nr);
    }
    if (T->algo == SAP_BTD_SPIKE) {
        sap_btd *R = T->red;
        const int k2 = 2 * k;
        const int64_t kk2 = 4 * kk;
        SAP_TRY(dk->zero(ctx, k2, k2, (int)P, R->D0, k2, kk2));
        SAP_TRY(dk->zero(ctx, k2, 2 * k2, (int)P, R->AC0, k2, 2 * kk2));
        SAP_TRY(dk->lacpy(ctx, k, k, (int)P, T->eye, k, 0, R->D0, k2, kk2));
        SAP_TRY(dk->lacpy(ctx, k, k, (int)P, T->eye, k, 0, R->D0 + (int64_t)k * k2 + k, k2, kk2));
        for (sap_int r = 0; r < P; r++) {
            sap_int nr = po[r + 1] - po[r];
            int ldv = (int)(nr * k);
            double *Ap = R->AC0 + 2 * r * kk2, *Cp = Ap + kk2;
            const double *Vr = T->V + po[r] * kk, *Wr = T->Wsp + po[r] * kk;
            if (r > 0) { /* A'_r: columns k..2k-1 (x^b of partition r-1) */
                SAP_TRY(dk->lacpy(ctx, k, k, 1, Wr, ldv, 0, Ap + (int64_t)k * k2, k2, 0));
                SAP_TRY(dk->lacpy(ctx, k, k, 1, Wr + (nr - 1) * k, ldv, 0, Ap + (int64_t)k * k2 + k, k2, 0));
            }
            if (r + 1 < P) { /* C'_r: columns 0..k-1 (x^t of partition r+1) */
                SAP_TRY(dk->lacpy(ctx, k, k, 1, Vr, ldv, 0, Cp, k2, 0));
                SAP_TRY(dk->lacpy(ctx, k, k, 1, Vr + (nr - 1) * k, ldv, 0, Cp + k, k2, 0));
            }
        }
        R->opt.variant = T->variant;
        R->factored = 0;
        st = sap_btd_factor(R);
        if (st < 0) {
            T->st.singular_block = -1;
            return SAP_ERROR(ctx, st, "sap_btd spike: the reduced system (%lld partitions) could not be factored",
                             (long long)P);
        }
    } else {
        const int k2 = 2 * k;
        const int64_t kk2 = 4 * kk;
        int nI = (int)(P - 1);
        int64_t bad;
        SAP_TRY(dk->zero(ctx, k2, k2, nI, T->R, k2, kk2));
        SAP_TRY(dk->lacpy(ctx, k, k, nI, T->eye, k, 0, T->R, k2, kk2));
        SAP_TRY(dk->lacpy(ctx, k, k, nI, T->eye, k, 0, T->R + (int64_t)k * k2 + k, k2, kk2));
        for (sap_int i = 0; i < nI; i++) {
            sap_int ni = po[i + 1] - po[i], nj = po[i + 2] - po[i + 1];
            double *Ri = T->R + i * kk2;
            SAP_TRY(dk->lacpy(ctx, k, k, 1, T->V + po[i] * kk + (ni - 1) * k, (int)(ni * k), 0, Ri + (int64_t)k * k2,
                              k2, 0));
            SAP_TRY(dk->lacpy(ctx, k, k, 1, T->Wsp + po[i + 1] * kk, (int)(nj * k), 0, Ri + k, k2, 0));
        }
        SAP_TRY(dk->getrf(ctx, k2, nI, T->R, kk2, T->rpiv, k2, NULL, 0, &bad));
        if (bad >= 0)
            SAP_FAIL(ctx, SAP_ERR_SINGULAR, "sap_btd reduced-spike: the interface system between partitions %lld "
                     "and %lld is singular", (long long)bad, (long long)bad + 1);
    }
cleanup:
    return st;
}

sap_status sap__spike_solve(sap_btd *T, double *z, int nrhs)
{
    sap_context *ctx = T->ctx;
    sap_status st = SAP_OK;
    const sap_dense_kernels *dk = T->dk;
    const int k = (int)T->k, n = (int)(T->k * T->nb);
    const int64_t kk = T->kk;
    const sap_int P = T->P, *po = T->po;
    const double *Hr = T->H;
    for (sap_int r = 0; r < P; r++) {
        sap_int nr = po[r + 1] - po[r];
        SAP_TRY(sap__bc_solve(T, po[r], nr, Hr, z + po[r] * k, n, nrhs));
        Hr += sap__bc_history(T, nr);
    }
    if (P == 1) return SAP_OK;
    const int ldy = (int)(2 * k * P);
    if ((int64_t)ldy * nrhs > T->ycap) {
        T->ops->mem_free(ctx, T->Y);
        T->Y = NULL;
        T->ycap = 0;
        SAP_TRY(T->ops->mem_alloc(ctx, (size_t)ldy * (size_t)nrhs * 8, (void **)&T->Y));
        T->ycap = (int64_t)ldy * nrhs;
    }
    double *Y = T->Y;
    int exact = T->algo == SAP_BTD_SPIKE;
    if (exact) {
        for (sap_int r = 0; r < P; r++) {
            SAP_TRY(dk->lacpy(ctx, k, nrhs, 1, z + po[r] * k, n, 0, Y + r * 2 * k, ldy, 0));
            SAP_TRY(dk->lacpy(ctx, k, nrhs, 1, z + (po[r + 1] - 1) * k, n, 0, Y + r * 2 * k + k, ldy, 0));
        }
        SAP_TRY(sap__btd_reserve(T->red, (int64_t)ldy * nrhs));
        SAP_TRY(sap__bc_solve(T->red, 0, P, T->red->H, Y, ldy, nrhs));
    } else {
        for (sap_int i = 0; i + 1 < P; i++) {
            SAP_TRY(dk->lacpy(ctx, k, nrhs, 1, z + (po[i + 1] - 1) * k, n, 0, Y + i * 2 * k, ldy, 0));
            SAP_TRY(dk->lacpy(ctx, k, nrhs, 1, z + po[i + 1] * k, n, 0, Y + i * 2 * k + k, ldy, 0));
        }
        SAP_TRY(dk->getrs(ctx, 2 * k, nrhs, (int)(P - 1), T->R, 4 * kk, T->rpiv, 2 * k, Y, ldy, 2 * k));
    }
    for (sap_int r = 0; r < P; r++) {
        sap_int nr = po[r + 1] - po[r];
        int ldv = (int)(nr * k);
        double *zr = z + po[r] * k;
        if (r + 1 < P) {
            const double *xt = exact ? Y + (r + 1) * 2 * k : Y + r * 2 * k + k;
            SAP_TRY(dk->gemm(ctx, ldv, nrhs, k, -1.0, T->V + po[r] * kk, ldv, 0, xt, ldy, 0, 1.0, zr, n, 0, 1));
        }
        if (r > 0) {
            const double *xb = exact ? Y + (r - 1) * 2 * k + k : Y + (r - 1) * 2 * k;
            SAP_TRY(dk->gemm(ctx, ldv, nrhs, k, -1.0, T->Wsp + po[r] * kk, ldv, 0, xb, ldy, 0, 1.0, zr, n, 0, 1));
        }
    }
cleanup:
    return st;
}
