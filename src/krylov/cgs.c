/* cgs.c -- conjugate gradients squared (Sonneveld 1989) with right, left or no
 * preconditioning, run on op = A M^-1 (right: x is updated with M^-1 of the directions, the
 * monitored residual is b - A x) or M^-1 A (left: ||M^-1 (b - A x)|| / ||M^-1 b||).  Two
 * SpMVs and two preconditioner applications per iteration, no A^T.  Shadow residual
 * rt = r0.  Breakdown: rho = rt . r = 0, rt . op(p) = 0. */
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

static int cgs_nvec(int param)
{
    (void)param;
    return 9; /* r, rt, u, p, q, v, hat, u + q, tmp */
}

const sap_krylov_method sap__krylov_cgs_method = {
    .name = "cgs", .help = "conjugate gradients squared", .id = SAP_KRYLOV_CGS, .nvec = cgs_nvec, .steps = 1,
    .sides = KRY_SIDES_LEFT | KRY_SIDES_RIGHT, .run = cgs_run};
