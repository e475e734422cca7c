/* cg.c -- preconditioned conjugate gradients (Hestenes-Stiefel) for SPD A and SPD M.
 * Symmetric form: the iteration monitors the unpreconditioned residual ||r|| = ||b - Ax||
 * whatever opt.side says (left and right preconditioning give the same iterates for CG).
 * One SpMV, one preconditioner apply and the fused update x += alpha p, r -= alpha q with
 * r.r per iteration.  Breakdown: p.Ap = 0 or r.z = 0 (z = M^-1 r). */
#include "krylov/krylov_impl.h"

static sap_status cg_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    sap_vec *r = &s->w[0], *z = &s->w[1], *p = &s->w[2], *q = &s->w[3], *x = s->x;
    const int pc = s->P != NULL;
    if (!pc) z = r;

    double rn = 0.0, rz = 0.0, pq = 0.0, rr = 0.0;
    SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    if (pc) {
        SAP_TRY(sap__krylov_prec(s, r, z));
        SAP_TRY(ops->dot(ctx, r, z, &rz));
        KRY_SCALAR(s, "rho = r . M^-1 r", rz, 1);
    } else {
        rz = rn * rn;
    }
    SAP_TRY(ops->copy(ctx, z, p));
    for (;;) {
        SAP_TRY(sap__krylov_spmv(s, p, q));
        SAP_TRY(ops->dot(ctx, p, q, &pq));
        KRY_SCALAR(s, "p . A p", pq, 1);
        const double alpha = rz / pq;
        KRY_SCALAR(s, "alpha", alpha, 0);
        SAP_TRY(ops->cg_update(ctx, alpha, p, q, x, r, &rr));
        if (sap__krylov_check(s, s->iter + 1.0, sqrt(rr))) break;
        SAP_TRY(sap__krylov_track_best(s, x));
        double rz_new = rr;
        if (pc) {
            SAP_TRY(sap__krylov_prec(s, r, z));
            SAP_TRY(ops->dot(ctx, r, z, &rz_new));
        }
        KRY_SCALAR(s, "rho = r . M^-1 r", rz_new, 1);
        const double beta = rz_new / rz;
        rz = rz_new;
        SAP_TRY(ops->axpby(ctx, 1.0, z, beta, p));
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

/* The same for k columns in lockstep (krylov_many.c): one SpMM and one block apply a step,
 * each column its own alpha, beta and stop. */
static sap_status cg_run_many(kry_many *km)
{
    const sap_backend_ops *ops = km->ops;
    sap_context *ctx = km->ctx;
    sap_status st = SAP_OK;
    const int k = km->k;
    sap_vec *R = &km->W[0], *Z = &km->W[1], *Pv = &km->W[2], *Q = &km->W[3];
    const int pc = km->P != NULL;
    if (!pc) Z = R;
    double rn[KRY_MANY_MAX], rz[KRY_MANY_MAX], pq[KRY_MANY_MAX], rr[KRY_MANY_MAX], a[KRY_MANY_MAX], b[KRY_MANY_MAX];
    SAP_TRY(sap__krylov_many_residual(km, &km->X, R, NULL, rn));
    for (int c = 0; c < k; c++)
        if (km->active[c] && sap__krylov_start(&km->col[c], rn[c])) sap__krylov_many_stop(km, c);
    if (pc) {
        SAP_TRY(sap__krylov_many_prec(km, R, Z));
        SAP_TRY(ops->cdot(ctx, k, 1, R, Z, rz));
        for (int c = 0; c < k; c++)
            if (km->active[c]) sap__krylov_many_scalar(km, c, "rho = r . M^-1 r", rz[c], 1);
    } else {
        for (int c = 0; c < k; c++) rz[c] = rn[c] * rn[c];
    }
    SAP_TRY(ops->copy(ctx, Z, Pv));
    while (sap__krylov_many_count(km) > 0) {
        SAP_TRY(sap__krylov_many_spmm(km, Pv, Q));
        SAP_TRY(ops->cdot(ctx, k, 1, Pv, Q, pq));
        for (int c = 0; c < k; c++) {
            a[c] = 0;
            if (!km->active[c] || sap__krylov_many_scalar(km, c, "p . A p", pq[c], 1)) continue;
            a[c] = rz[c] / pq[c];
            sap__krylov_many_scalar(km, c, "alpha", a[c], 0);
        }
        /* x += alpha p, r -= alpha q, rr = r . r */
        for (int c = 0; c < k; c++) b[c] = 1.0;
        SAP_TRY(sap__krylov_many_axpby(km, a, Pv, b, &km->X));
        for (int c = 0; c < k; c++) a[c] = -a[c];
        SAP_TRY(sap__krylov_many_axpby(km, a, Q, b, R));
        SAP_TRY(ops->cdot(ctx, k, 1, R, R, rr));
        for (int c = 0; c < k; c++) rn[c] = sqrt(rr[c]);
        sap__krylov_many_check(km, NULL, 1.0, rn);
        if (sap__krylov_many_monitor(km)) break;
        SAP_TRY(sap__krylov_many_track_best(km));
        double rzn[KRY_MANY_MAX];
        if (pc) {
            SAP_TRY(sap__krylov_many_prec(km, R, Z));
            SAP_TRY(ops->cdot(ctx, k, 1, R, Z, rzn));
        } else {
            for (int c = 0; c < k; c++) rzn[c] = rr[c];
        }
        for (int c = 0; c < k; c++) {
            a[c] = 1.0;
            b[c] = 0.0;
            if (!km->active[c] || sap__krylov_many_scalar(km, c, "rho = r . M^-1 r", rzn[c], 1)) continue;
            b[c] = rzn[c] / rz[c];
            rz[c] = rzn[c];
        }
        SAP_TRY(sap__krylov_many_axpby(km, a, Z, b, Pv));
    }
    SAP_TRY(sap__krylov_many_restore_best(km));
cleanup:
    return st;
}

static int cg_nvec(int param)
{
    (void)param;
    return 4; /* r, z, p, q */
}

const sap_krylov_method sap__krylov_cg_method = {
    .name = "cg", .help = "conjugate gradients for SPD A and M (symmetric preconditioning)",
    .id = SAP_KRYLOV_CG, .nvec = cg_nvec, .steps = 1, .sides = KRY_SIDES_SYMMETRIC, .run = cg_run,
    .run_many = cg_run_many};
