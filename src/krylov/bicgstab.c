/* bicgstab.c -- BiCGStab (van der Vorst 1992) with right, left or no preconditioning.
 * Right: the iteration runs on A M^-1 and updates x with phat = M^-1 p, shat = M^-1 s, so
 * it monitors the true residual b - A x.  Left: it runs on M^-1 A and monitors
 * ||M^-1 (b - A x)|| / ||M^-1 b||.  Two SpMVs per iteration; the iteration can stop
 * after the first half (counted 0.5, the (j+1)/(2l) rule of BiCGStab(l) with l = 1).
 * Shadow residual r0hat = r0.  Breakdown: rho = r0hat . r = 0, r0hat . v = 0, t = 0,
 * omega = 0. */
#include "krylov/krylov_impl.h"

static sap_status bicgstab_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    sap_vec *r = &s->w[0], *rhat = &s->w[1], *p = &s->w[2], *v = &s->w[3];
    sap_vec *ph = &s->w[4], *sh = &s->w[5], *t = &s->w[6], *tmp = &s->w[7], *x = s->x;
    const int right = s->side == KRY_SIDE_RIGHT;
    if (!right) {
        ph = p; /* x is updated with p and s themselves */
        sh = r;
    }

    double rn = 0.0, rho = 1.0, alpha = 1.0, omega = 1.0;
    SAP_TRY(sap__krylov_residual(s, x, r, tmp, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    SAP_TRY(ops->copy(ctx, r, rhat));
    for (;;) {
        const double base = s->iter;
        double rho_new = 0.0, rv = 0.0, d[2];
        SAP_TRY(ops->dot(ctx, rhat, r, &rho_new));
        KRY_SCALAR(s, "rho = r0hat . r", rho_new, 1);
        const double beta = (rho_new / rho) * (alpha / omega);
        KRY_SCALAR(s, "beta", beta, 0);
        rho = rho_new;
        /* p = r + beta (p - omega v) */
        SAP_TRY(ops->axpbypcz(ctx, 1.0, r, -beta * omega, v, beta, p));
        /* v = op(p), keeping phat = M^-1 p for the update of x */
        if (right) {
            SAP_TRY(sap__krylov_prec(s, p, ph));
            SAP_TRY(sap__krylov_spmv(s, ph, v));
        } else {
            SAP_TRY(sap__krylov_op(s, p, v, tmp));
        }
        SAP_TRY(ops->dot(ctx, rhat, v, &rv));
        KRY_SCALAR(s, "r0hat . v", rv, 1);
        alpha = rho / rv;
        KRY_SCALAR(s, "alpha", alpha, 0);
        /* s = r - alpha v (in place in r) */
        SAP_TRY(ops->axpby_nrm2(ctx, -alpha, v, 1.0, r, &rn));
        if (sap__krylov_check(s, base + 0.5, rn)) {
            SAP_TRY(ops->axpby(ctx, alpha, ph, 1.0, x));
            break;
        }
        /* t = op(s), keeping shat = M^-1 s */
        if (right) {
            SAP_TRY(sap__krylov_prec(s, r, sh));
            SAP_TRY(sap__krylov_spmv(s, sh, t));
        } else {
            SAP_TRY(sap__krylov_op(s, r, t, tmp));
        }
        const sap_vec ts[2] = {*t, *r};
        SAP_TRY(ops->mdot(ctx, 2, ts, t, d)); /* t.t, s.t */
        if (d[0] == 0.0) {
            /* t = 0 with s != 0: A (or M) is singular along s */
            SAP_TRY(ops->axpby(ctx, alpha, ph, 1.0, x));
            sap__krylov_breakdown(s, "t . t", d[0]);
            goto done;
        }
        omega = d[1] / d[0];
        if (!isfinite(omega)) {
            SAP_TRY(ops->axpby(ctx, alpha, ph, 1.0, x));
            sap__krylov_breakdown(s, "omega", omega);
            goto done;
        }
        /* x += alpha phat + omega shat; r = s - omega t */
        SAP_TRY(ops->axpbypcz(ctx, alpha, ph, omega, sh, 1.0, x));
        SAP_TRY(ops->axpby_nrm2(ctx, -omega, t, 1.0, r, &rn));
        if (sap__krylov_check(s, base + 1.0, rn)) break;
        SAP_TRY(sap__krylov_track_best(s, x));
        KRY_SCALAR(s, "omega", omega, 1);
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

static int bicgstab_nvec(int param)
{
    (void)param;
    return 8;
}

const sap_krylov_method sap__krylov_bicgstab_method = {
    .name = "bicgstab", .help = "BiCGStab (iterations in half steps)", .id = SAP_KRYLOV_BICGSTAB,
    .nvec = bicgstab_nvec, .steps = 2, .sides = KRY_SIDES_LEFT | KRY_SIDES_RIGHT, .run = bicgstab_run};
