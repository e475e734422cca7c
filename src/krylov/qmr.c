/* qmr.c -- QMR without look-ahead (Freund and Nachtigal 1991) in the coupled two-term form
 * of Barrett et al., Templates (1994), Fig. 2.8, with the splitting M1 = I, M2 = M: the
 * Lanczos vectors are built for A M^-1 and A^T (dual side preconditioned by M^-T,
 * sap__krylov_prec_t: the preconditioner set up on A^T, see krylov_impl.h), x is updated with
 * M^-1 of the directions and the monitored residual is ||r|| = ||b - A x|| (recursive).
 * The preconditioner enters in this one way (opt.side is ignored).  Two SpMVs (A, A^T) and
 * two preconditioner applications per iteration.  Breakdown: rho = ||v~|| = 0 or
 * xi = ||z|| = 0 (Lanczos), delta = z . v = 0, eps = q . A p = 0, beta = 0, gamma = 0. */
#include "krylov/krylov_impl.h"

static sap_status qmr_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    sap_vec *r = &s->w[0], *vt = &s->w[1], *v = &s->w[2], *wt = &s->w[3], *w = &s->w[4], *z = &s->w[5];
    sap_vec *yt = &s->w[6], *p = &s->w[7], *q = &s->w[8], *pt = &s->w[9], *d = &s->w[10], *sv = &s->w[11];
    sap_vec *x = s->x;

    double rn = 0.0, rho = 0.0, xi = 0.0, gamma = 1.0, eta = -1.0, theta = 0.0, eps = 1.0;
    SAP_TRY(sap__krylov_residual(s, x, r, NULL, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    SAP_TRY(sap__krylov_track_best(s, x)); /* x0: a finite fallback if the iteration overflows */
    SAP_TRY(ops->copy(ctx, r, vt));
    rho = rn;
    SAP_TRY(ops->copy(ctx, r, wt));
    SAP_TRY(sap__krylov_prec_t(s, wt, z));
    SAP_TRY(ops->nrm2(ctx, z, &xi));
    for (int first = 1;; first = 0) {
        KRY_SCALAR(s, "rho = ||v~||", rho, 1);
        KRY_SCALAR(s, "xi = ||M^-T w~||", xi, 1);
        /* v = vt / rho, w = wt / xi, z = z / xi */
        SAP_TRY(ops->axpby(ctx, 1.0 / rho, vt, 0.0, v));
        SAP_TRY(ops->axpby(ctx, 1.0 / xi, wt, 0.0, w));
        SAP_TRY(ops->scale(ctx, z, 1.0 / xi));
        double delta = 0.0;
        SAP_TRY(ops->dot(ctx, z, v, &delta));
        KRY_SCALAR(s, "delta = z . v", delta, 1);
        SAP_TRY(sap__krylov_prec(s, v, yt)); /* y~ = M^-1 v */
        if (first) {
            SAP_TRY(ops->copy(ctx, yt, p));
            SAP_TRY(ops->copy(ctx, z, q));
        } else {
            SAP_TRY(ops->axpby(ctx, 1.0, yt, -(xi * delta / eps), p));
            SAP_TRY(ops->axpby(ctx, 1.0, z, -(rho * delta / eps), q));
        }
        SAP_TRY(sap__krylov_spmv(s, p, pt));
        SAP_TRY(ops->dot(ctx, q, pt, &eps));
        KRY_SCALAR(s, "eps = q . A p", eps, 1);
        const double beta = eps / delta;
        KRY_SCALAR(s, "beta", beta, 1);
        /* vt = A p - beta v; wt = A^T q - beta w; z = M^-T wt */
        SAP_TRY(ops->axpbypcz(ctx, 1.0, pt, -beta, v, 0.0, vt));
        double rho_new = 0.0;
        SAP_TRY(ops->nrm2(ctx, vt, &rho_new));
        SAP_TRY(sap__krylov_spmv_t(s, q, wt));
        SAP_TRY(ops->axpby(ctx, -beta, w, 1.0, wt));
        SAP_TRY(sap__krylov_prec_t(s, wt, z));
        SAP_TRY(ops->nrm2(ctx, z, &xi));
        const double theta_old = theta;
        theta = rho_new / (gamma * fabs(beta));
        const double gamma_new = 1.0 / sqrt(1.0 + theta * theta);
        KRY_SCALAR(s, "gamma", gamma_new, 1);
        eta = -eta * rho * gamma_new * gamma_new / (beta * gamma * gamma);
        KRY_SCALAR(s, "eta", eta, 0);
        const double f = (theta_old * gamma_new) * (theta_old * gamma_new);
        /* d = eta p + f d; s = eta A p + f s; x += d; r -= s */
        SAP_TRY(ops->axpby(ctx, eta, p, first ? 0.0 : f, d));
        SAP_TRY(ops->axpby(ctx, eta, pt, first ? 0.0 : f, sv));
        SAP_TRY(ops->axpby(ctx, 1.0, d, 1.0, x));
        SAP_TRY(ops->axpby_nrm2(ctx, -1.0, sv, 1.0, r, &rn));
        rho = rho_new;
        gamma = gamma_new;
        if (sap__krylov_check(s, s->iter + 1.0, rn)) break;
        SAP_TRY(sap__krylov_track_best(s, x));
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

static int qmr_nvec(int param)
{
    (void)param;
    return 12; /* r, v~, v, w~, w, z, y~, p, q, A p, d, s */
}

const sap_krylov_method sap__krylov_qmr_method = {
    .name = "qmr", .help = "QMR without look-ahead (A^T x products; M^-T: the preconditioner set up on A^T as well)",
    .id = SAP_KRYLOV_QMR, .nvec = qmr_nvec, .steps = 1, .sides = KRY_SIDES_SYMMETRIC, .run = qmr_run, .dual = 1};
