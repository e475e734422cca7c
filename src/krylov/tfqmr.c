/* tfqmr.c -- transpose-free QMR (Freund 1993) with right, left or no preconditioning, run
 * on op = A M^-1 (right: the directions d are kept as M^-1 d so that x is updated
 * directly) or M^-1 A (left).  Each iteration has two half steps (one SpMV and one
 * preconditioner application each), counted 0.5.  The monitored residual is the
 * quasi-residual bound tau sqrt(m + 1) (m: half steps so far), an upper bound of ||r||
 * (left: of ||M^-1 r||) that costs no extra SpMV; the front end checks the true residual
 * at the end and restarts when only the bound met the tolerance.  Shadow residual
 * rt = r0.  Breakdown: rho = rt . w = 0, sigma = rt . v = 0.  A lockstep form for k
 * right-hand sides (tfqmr_run_many). */
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

/* The same for k columns in lockstep (krylov_many.c): per half step one SpMM and one block
 * preconditioner apply, each column its own alpha, beta, theta, eta, tau and stop (a column
 * may stop after either half step; the others go on). */
static sap_status tfqmr_run_many(kry_many *km)
{
    const sap_backend_ops *ops = km->ops;
    sap_context *ctx = km->ctx;
    sap_status st = SAP_OK;
    const int k = km->k;
    sap_vec *Wv = &km->W[0], *RT = &km->W[1], *Y1 = &km->W[2], *Y2 = &km->W[3], *V = &km->W[4], *U1 = &km->W[5];
    sap_vec *U2 = &km->W[6], *D = &km->W[7], *H1 = &km->W[8], *H2 = &km->W[9], *TMP = &km->W[10];
    double rn[KRY_MANY_MAX], rho[KRY_MANY_MAX], theta[KRY_MANY_MAX], eta[KRY_MANY_MAX], tau[KRY_MANY_MAX];
    double mm[KRY_MANY_MAX], alpha[KRY_MANY_MAX], malpha[KRY_MANY_MAX], base[KRY_MANY_MAX], coef[KRY_MANY_MAX];
    double one[KRY_MANY_MAX], zero[KRY_MANY_MAX], b2[KRY_MANY_MAX], d[KRY_MANY_MAX];
    const sap_vec *dir1 = NULL, *dir2 = NULL;
    SAP_TRY(sap__krylov_many_residual(km, &km->X, Wv, TMP, rn));
    for (int q = 0; q < k; q++) {
        one[q] = 1.0;
        zero[q] = theta[q] = eta[q] = mm[q] = 0.0;
        tau[q] = rn[q];
        rho[q] = rn[q] * rn[q];
        if (km->active[q] && sap__krylov_start(&km->col[q], rn[q])) sap__krylov_many_stop(km, q);
    }
    if (sap__krylov_many_count(km) == 0) goto done;
    SAP_TRY(sap__krylov_many_track_best(km)); /* x0: a finite fallback if the iteration overflows */
    SAP_TRY(ops->copy(ctx, Wv, RT));
    SAP_TRY(ops->copy(ctx, Wv, Y1));
    SAP_TRY(sap__krylov_many_op_hat(km, Y1, U1, H1, TMP, &dir1));
    SAP_TRY(ops->copy(ctx, U1, V));
    SAP_TRY(ops->set(ctx, D, 0.0));
    while (sap__krylov_many_count(km) > 0) {
        SAP_TRY(ops->cdot(ctx, k, 1, RT, V, d));
        for (int q = 0; q < k; q++) {
            base[q] = km->col[q].iter;
            alpha[q] = malpha[q] = 0.0;
            if (!km->active[q] || sap__krylov_many_scalar(km, q, "sigma = rt . v", d[q], 1)) continue;
            alpha[q] = rho[q] / d[q];
            if (sap__krylov_many_scalar(km, q, "alpha", alpha[q], 0)) continue;
            malpha[q] = -alpha[q];
        }
        /* y2 = y1 - alpha v */
        SAP_TRY(sap__krylov_many_axpbypcz(km, one, Y1, malpha, V, zero, Y2));
        for (int j = 0; j < 2; j++) {
            const sap_vec *U = U1, *dir = dir1;
            if (j == 1) {
                SAP_TRY(sap__krylov_many_op_hat(km, Y2, U2, H2, TMP, &dir2));
                U = U2;
                dir = dir2;
            }
            double wn[KRY_MANY_MAX];
            SAP_TRY(sap__krylov_many_axpby(km, malpha, U, one, Wv));
            SAP_TRY(sap__krylov_many_nrm2(km, Wv, wn));
            /* d = y_m + (theta^2 eta / alpha) d (in the x space) */
            for (int q = 0; q < k; q++) coef[q] = km->active[q] ? theta[q] * theta[q] * eta[q] / alpha[q] : 1.0;
            SAP_TRY(sap__krylov_many_axpby(km, one, dir, coef, D));
            for (int q = 0; q < k; q++) {
                if (!km->active[q]) continue;
                theta[q] = wn[q] / tau[q];
                const double c = 1.0 / sqrt(1.0 + theta[q] * theta[q]);
                tau[q] = tau[q] * theta[q] * c;
                eta[q] = c * c * alpha[q];
                sap__krylov_many_scalar(km, q, "eta", eta[q], 0);
            }
            SAP_TRY(sap__krylov_many_axpby(km, eta, D, one, &km->X));
            for (int q = 0; q < k; q++) {
                if (!km->active[q]) continue;
                mm[q] += 1.0;
                if (sap__krylov_check(&km->col[q], base[q] + 0.5 * (j + 1), tau[q] * sqrt(mm[q] + 1.0)))
                    sap__krylov_many_stop(km, q);
            }
            if (sap__krylov_many_monitor(km)) goto done;
        }
        SAP_TRY(sap__krylov_many_track_best(km));
        SAP_TRY(ops->cdot(ctx, k, 1, RT, Wv, d));
        double beta[KRY_MANY_MAX];
        for (int q = 0; q < k; q++) {
            beta[q] = b2[q] = 0.0;
            if (!km->active[q] || sap__krylov_many_scalar(km, q, "rho = rt . w", d[q], 1)) continue;
            beta[q] = d[q] / rho[q];
            if (sap__krylov_many_scalar(km, q, "beta", beta[q], 0)) continue;
            b2[q] = beta[q] * beta[q];
            rho[q] = d[q];
        }
        /* y1 = w + beta y2; u1 = op(y1); v = u1 + beta (u2 + beta v) */
        SAP_TRY(sap__krylov_many_axpbypcz(km, one, Wv, beta, Y2, zero, Y1));
        SAP_TRY(sap__krylov_many_op_hat(km, Y1, U1, H1, TMP, &dir1));
        SAP_TRY(sap__krylov_many_axpbypcz(km, one, U1, beta, U2, b2, V));
    }
done:
    SAP_TRY(sap__krylov_many_restore_best(km));
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
    .nvec = tfqmr_nvec, .steps = 2, .sides = KRY_SIDES_LEFT | KRY_SIDES_RIGHT, .run = tfqmr_run,
    .run_many = tfqmr_run_many};
