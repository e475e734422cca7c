/* cgs.c -- conjugate gradients squared (Sonneveld 1989) with right, left or no
 * preconditioning, run on op = A M^-1 (right: x is updated with M^-1 of the directions, the
 * monitored residual is b - A x) or M^-1 A (left: ||M^-1 (b - A x)|| / ||M^-1 b||).  Two
 * SpMVs and two preconditioner applications per iteration, no A^T.  Shadow residual
 * rt = r0.  Breakdown: rho = rt . r = 0, rt . op(p) = 0.  A lockstep form for k right-hand
 * sides (cgs_run_many). */
#include "krylov/krylov_impl.h"

static sap_status cgs_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    sap_vec *r = &s->w[0], *rt = &s->w[1], *u = &s->w[2], *p = &s->w[3], *q = &s->w[4], *v = &s->w[5];
    sap_vec *hat = &s->w[6], *uq = &s->w[7], *tmp = &s->w[8], *x = s->x;

    double rn = 0.0, rho = 0.0, rho_old = 1.0;
    SAP_TRY(sap__krylov_residual(s, x, r, tmp, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    SAP_TRY(sap__krylov_track_best(s, x)); /* x0: a finite fallback if the iteration overflows */
    SAP_TRY(ops->copy(ctx, r, rt));
    for (int first = 1;; first = 0) {
        SAP_TRY(ops->dot(ctx, rt, r, &rho));
        KRY_SCALAR(s, "rho = rt . r", rho, 1);
        if (first) {
            SAP_TRY(ops->copy(ctx, r, u));
            SAP_TRY(ops->copy(ctx, r, p));
        } else {
            const double beta = rho / rho_old;
            KRY_SCALAR(s, "beta", beta, 0);
            /* u = r + beta q; p = u + beta (q + beta p) */
            SAP_TRY(ops->axpbypcz(ctx, 1.0, r, beta, q, 0.0, u));
            SAP_TRY(ops->axpbypcz(ctx, 1.0, u, beta, q, beta * beta, p));
        }
        rho_old = rho;
        const sap_vec *dir = NULL;
        SAP_TRY(sap__krylov_op_hat(s, p, v, hat, tmp, &dir));
        double sigma = 0.0;
        SAP_TRY(ops->dot(ctx, rt, v, &sigma));
        KRY_SCALAR(s, "rt . op(p)", sigma, 1);
        const double alpha = rho / sigma;
        KRY_SCALAR(s, "alpha", alpha, 0);
        /* q = u - alpha v; uq = u + q */
        SAP_TRY(ops->axpbypcz(ctx, 1.0, u, -alpha, v, 0.0, q));
        SAP_TRY(ops->axpbypcz(ctx, 1.0, u, 1.0, q, 0.0, uq));
        /* v = op(u + q); x += alpha M^-1 (u + q) (right) or alpha (u + q) */
        SAP_TRY(sap__krylov_op_hat(s, uq, v, hat, tmp, &dir));
        SAP_TRY(ops->axpby(ctx, alpha, dir, 1.0, x));
        SAP_TRY(ops->axpby_nrm2(ctx, -alpha, v, 1.0, r, &rn));
        if (sap__krylov_check(s, s->iter + 1.0, rn)) break;
        SAP_TRY(sap__krylov_track_best(s, x));
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

/* The same for k columns in lockstep (krylov_many.c): two SpMMs and two block preconditioner
 * applies an iteration, each column its own rho, alpha, beta and stop. */
static sap_status cgs_run_many(kry_many *km)
{
    const sap_backend_ops *ops = km->ops;
    sap_context *ctx = km->ctx;
    sap_status st = SAP_OK;
    const int k = km->k;
    sap_vec *R = &km->W[0], *RT = &km->W[1], *U = &km->W[2], *Pv = &km->W[3], *Q = &km->W[4], *V = &km->W[5];
    sap_vec *HAT = &km->W[6], *UQ = &km->W[7], *TMP = &km->W[8];
    double rn[KRY_MANY_MAX], rho[KRY_MANY_MAX], rho_old[KRY_MANY_MAX], beta[KRY_MANY_MAX], b2[KRY_MANY_MAX];
    double alpha[KRY_MANY_MAX], malpha[KRY_MANY_MAX], one[KRY_MANY_MAX], zero[KRY_MANY_MAX];
    SAP_TRY(sap__krylov_many_residual(km, &km->X, R, TMP, rn));
    for (int q = 0; q < k; q++) {
        one[q] = rho_old[q] = 1.0;
        zero[q] = 0.0;
        if (km->active[q] && sap__krylov_start(&km->col[q], rn[q])) sap__krylov_many_stop(km, q);
    }
    SAP_TRY(sap__krylov_many_track_best(km)); /* x0: a finite fallback if the iteration overflows */
    SAP_TRY(ops->copy(ctx, R, RT));
    for (int first = 1; sap__krylov_many_count(km) > 0; first = 0) {
        SAP_TRY(ops->cdot(ctx, k, 1, RT, R, rho));
        for (int q = 0; q < k; q++) {
            beta[q] = b2[q] = 0.0;
            if (!km->active[q] || sap__krylov_many_scalar(km, q, "rho = rt . r", rho[q], 1)) continue;
            if (!first) {
                beta[q] = rho[q] / rho_old[q];
                if (sap__krylov_many_scalar(km, q, "beta", beta[q], 0)) continue;
                b2[q] = beta[q] * beta[q];
            }
            rho_old[q] = rho[q];
        }
        if (first) {
            SAP_TRY(ops->copy(ctx, R, U));
            SAP_TRY(ops->copy(ctx, R, Pv));
        } else {
            /* u = r + beta q; p = u + beta (q + beta p) */
            SAP_TRY(sap__krylov_many_axpbypcz(km, one, R, beta, Q, zero, U));
            SAP_TRY(sap__krylov_many_axpbypcz(km, one, U, beta, Q, b2, Pv));
        }
        const sap_vec *dir = NULL;
        SAP_TRY(sap__krylov_many_op_hat(km, Pv, V, HAT, TMP, &dir));
        double sigma[KRY_MANY_MAX];
        SAP_TRY(ops->cdot(ctx, k, 1, RT, V, sigma));
        for (int q = 0; q < k; q++) {
            alpha[q] = malpha[q] = 0.0;
            if (!km->active[q] || sap__krylov_many_scalar(km, q, "rt . op(p)", sigma[q], 1)) continue;
            alpha[q] = rho[q] / sigma[q];
            if (sap__krylov_many_scalar(km, q, "alpha", alpha[q], 0)) continue;
            malpha[q] = -alpha[q];
        }
        /* q = u - alpha v; uq = u + q */
        SAP_TRY(sap__krylov_many_axpbypcz(km, one, U, malpha, V, zero, Q));
        SAP_TRY(sap__krylov_many_axpbypcz(km, one, U, one, Q, zero, UQ));
        /* v = op(u + q); x += alpha M^-1 (u + q) (right) or alpha (u + q) */
        SAP_TRY(sap__krylov_many_op_hat(km, UQ, V, HAT, TMP, &dir));
        SAP_TRY(sap__krylov_many_axpby(km, alpha, dir, one, &km->X));
        SAP_TRY(sap__krylov_many_axpby(km, malpha, V, one, R));
        SAP_TRY(sap__krylov_many_nrm2(km, R, rn));
        sap__krylov_many_check(km, NULL, 1.0, rn);
        if (sap__krylov_many_monitor(km)) break;
        SAP_TRY(sap__krylov_many_track_best(km));
    }
    SAP_TRY(sap__krylov_many_restore_best(km));
cleanup:
    return st;
}

static int cgs_nvec(int param)
{
    (void)param;
    return 9; /* r, rt, u, p, q, v, hat, u + q, tmp */
}

const sap_krylov_method sap__krylov_cgs_method = {
    .name = "cgs", .help = "conjugate gradients squared", .id = SAP_KRYLOV_CGS, .nvec = cgs_nvec, .steps = 1,
    .sides = KRY_SIDES_LEFT | KRY_SIDES_RIGHT, .run = cgs_run, .run_many = cgs_run_many};
