/* tfqmr.c -- transpose-free QMR (Freund 1993) with right, left or no preconditioning, run
 * on op = A M^-1 (right: the directions d are kept as M^-1 d so that x is updated
 * directly) or M^-1 A (left).  Each iteration has two half steps (one SpMV and one
 * preconditioner application each), counted 0.5.  The monitored residual is the
 * quasi-residual bound tau sqrt(m + 1) (m: half steps so far), an upper bound of ||r||
 * (left: of ||M^-1 r||) that costs no extra SpMV; the front end checks the true residual
 * at the end and restarts when only the bound met the tolerance.  Shadow residual
 * rt = r0.  Breakdown: rho = rt . w = 0, sigma = rt . v = 0. */
#include "krylov/krylov_impl.h"

static sap_status tfqmr_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    sap_vec *w = &s->w[0], *rt = &s->w[1], *y1 = &s->w[2], *y2 = &s->w[3], *v = &s->w[4], *u1 = &s->w[5];
    sap_vec *u2 = &s->w[6], *d = &s->w[7], *h1 = &s->w[8], *h2 = &s->w[9], *tmp = &s->w[10], *x = s->x;

    double rn = 0.0, rho = 0.0, theta = 0.0, eta = 0.0, tau = 0.0, m = 0.0;
    const sap_vec *dir1 = NULL, *dir2 = NULL;
    SAP_TRY(sap__krylov_residual(s, x, w, tmp, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    SAP_TRY(sap__krylov_track_best(s, x)); /* x0: a finite fallback if the iteration overflows */
    tau = rn;
    SAP_TRY(ops->copy(ctx, w, rt));
    SAP_TRY(ops->copy(ctx, w, y1));
    SAP_TRY(sap__krylov_op_hat(s, y1, u1, h1, tmp, &dir1)); /* u1 = op(y1), h1 = M^-1 y1 (right) */
    SAP_TRY(ops->copy(ctx, u1, v));
    SAP_TRY(ops->set(ctx, d, 0.0));
    rho = rn * rn;
    for (;;) {
        const double base = s->iter;
        double sigma = 0.0;
        SAP_TRY(ops->dot(ctx, rt, v, &sigma));
        KRY_SCALAR(s, "sigma = rt . v", sigma, 1);
        const double alpha = rho / sigma;
        KRY_SCALAR(s, "alpha", alpha, 0);
        /* y2 = y1 - alpha v */
        SAP_TRY(ops->axpbypcz(ctx, 1.0, y1, -alpha, v, 0.0, y2));
        for (int j = 0; j < 2; j++) {
            const sap_vec *u = u1, *dir = dir1;
            if (j == 1) {
                SAP_TRY(sap__krylov_op_hat(s, y2, u2, h2, tmp, &dir2));
                u = u2;
                dir = dir2;
            }
            double wn = 0.0;
            SAP_TRY(ops->axpby_nrm2(ctx, -alpha, u, 1.0, w, &wn));
            /* d = y_m + (theta^2 eta / alpha) d (in the x space) */
            SAP_TRY(ops->axpby(ctx, 1.0, dir, theta * theta * eta / alpha, d));
            theta = wn / tau;
            const double c = 1.0 / sqrt(1.0 + theta * theta);
            tau = tau * theta * c;
            eta = c * c * alpha;
            KRY_SCALAR(s, "eta", eta, 0);
            SAP_TRY(ops->axpby(ctx, eta, d, 1.0, x));
            m += 1.0;
            if (sap__krylov_check(s, base + 0.5 * (j + 1), tau * sqrt(m + 1.0))) goto done;
        }
        SAP_TRY(sap__krylov_track_best(s, x));
        double rho_new = 0.0;
        SAP_TRY(ops->dot(ctx, rt, w, &rho_new));
        KRY_SCALAR(s, "rho = rt . w", rho_new, 1);
        const double beta = rho_new / rho;
        KRY_SCALAR(s, "beta", beta, 0);
        rho = rho_new;
        /* y1 = w + beta y2; u1 = op(y1); v = u1 + beta (u2 + beta v) */
        SAP_TRY(ops->axpbypcz(ctx, 1.0, w, beta, y2, 0.0, y1));
        SAP_TRY(sap__krylov_op_hat(s, y1, u1, h1, tmp, &dir1));
        SAP_TRY(ops->axpbypcz(ctx, 1.0, u1, beta, u2, beta * beta, v));
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

static int tfqmr_nvec(int param)
{
    (void)param;
    return 11; /* w, rt, y1, y2, v, u1, u2, d, M^-1 y1, M^-1 y2, tmp */
}

const sap_krylov_method sap__krylov_tfqmr_method = {
    .name = "tfqmr", .help = "transpose-free QMR (iterations in half steps)", .id = SAP_KRYLOV_TFQMR,
    .nvec = tfqmr_nvec, .steps = 2, .sides = KRY_SIDES_LEFT | KRY_SIDES_RIGHT, .run = tfqmr_run};
