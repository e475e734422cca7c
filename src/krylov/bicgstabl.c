/* bicgstabl.c -- BiCGStab(l) (Sleijpen and Fokkema 1993, in the form of van der Vorst's
 * book, Alg. 9.3) with right, left or no preconditioning; l = 2 by default.
 *
 * One iteration = l BiCG steps (2 SpMVs each) and a minimal-residual (MR) polynomial step
 * of degree l over r_1..r_l, orthogonalised by modified Gram-Schmidt (row-oriented: after
 * r_j is final, one mdot gives sigma_j = r_j.r_j, r_0.r_j and the tau_jk = r_k.r_j for all
 * k > j, then r_k -= tau_jk r_j).
 *
 * Iteration count in steps of 1/(2l) -- quarter steps for l = 2, the convention of the
 * SaP::GPU papers.  Exit points within iteration k:
 *   k + (j+1)/(2l)  after BiCG step j = 0..l-1 (l = 2: +0.25, +0.5);
 *   k + (l+j)/(2l)  after the MR step of degree j < l, taken when the residual of that
 *                   truncated polynomial (||r_0||^2 - sum_{i<=j} (r_0.r_i)^2/sigma_i,
 *                   known from the MGS scalars) is below the tolerance (l = 2: +0.75);
 *   k + 1           after the full MR step of degree l.
 * Every exit point leaves a consistent pair (x, r) (the MR exits update x with the
 * truncated polynomial's coefficients).  If a truncated MR step was taken but its
 * residual turned out above the tolerance, the recurrences restart (rho0 = alpha = 0 ...)
 * from that valid iterate, the shadow vector kept.  SaP::GPU's own code also reports
 * .25/.5/.75 exits, but its middle exits test partially updated residuals.
 *
 * Right preconditioning runs on A M^-1 y = r0 with y accumulated from 0 and
 * x = x0 + M^-1 y at the end (one extra apply); left runs on M^-1 A.  Breakdown: rho0 = 0,
 * rho = r0hat.r_j = 0, gamma = r0hat.u_{j+1} = 0, sigma_j = 0, omega = gamma_l = 0. */
#include "krylov/krylov_impl.h"

#include <string.h>

#define LMAX 16

/* The MR coefficients for degree d (1 <= d <= l): gamma (T gamma = gamma', T unit upper
 * triangular with the tau), and gamma'' for the update of x. */
static void mr_coefficients(int d, double tau[LMAX + 1][LMAX + 1], const double *gp, double *gamma, double *gpp)
{
    gamma[d] = gp[d];
    for (int j = d - 1; j >= 1; j--) {
        double g = gp[j];
        for (int i = j + 1; i <= d; i++) g -= tau[j][i] * gamma[i];
        gamma[j] = g;
    }
    for (int j = 1; j < d; j++) {
        double g = gamma[j + 1];
        for (int i = j + 1; i < d; i++) g += tau[j][i] * gamma[i + 1];
        gpp[j] = g;
    }
}

/* Applies the MR step of degree d: xs += gamma_1 r_0 + sum gamma''_j r_j,
 * u_0 -= sum gamma_j u_j, r_0 -= sum gamma'_j r_j; *rn = ||r_0||. */
static sap_status mr_update(kry_solve *s, int d, sap_vec *r, sap_vec *u, sap_vec *xs, const double *gamma,
                            const double *gpp, const double *gp, double *rn)
{
    sap_status st = SAP_OK;
    double a[LMAX + 1];
    a[0] = gamma[1];
    for (int j = 1; j < d; j++) a[j] = gpp[j];
    SAP_TRY(sap__krylov_maxpy(s, d, a, r, xs));
    for (int j = 1; j <= d; j++) a[j - 1] = -gamma[j];
    SAP_TRY(sap__krylov_maxpy(s, d, a, u + 1, u));
    for (int j = 1; j < d; j++) a[j - 1] = -gp[j];
    SAP_TRY(sap__krylov_maxpy(s, d - 1, a, r + 1, r));
    SAP_TRY(s->ops->axpby_nrm2(s->ctx, -gp[d], &r[d], 1.0, r, rn));
cleanup:
    return st;
}

static sap_status bicgstabl_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    const int l = s->K->param;
    sap_vec *r = &s->w[0], *u = &s->w[l + 1];
    sap_vec *rhat = &s->w[2 * l + 2], *y = &s->w[2 * l + 3], *tmp = &s->w[2 * l + 4];
    const int right = s->side == KRY_SIDE_RIGHT;
    sap_vec *xs = right ? y : s->x; /* the vector the iteration updates */
    double tau[LMAX + 1][LMAX + 1], sigma[LMAX + 1], gp[LMAX + 1], gamma[LMAX + 1], gpp[LMAX + 1];
    double dd[LMAX + 2];
    sap_vec list[LMAX + 2];
    memset(tau, 0, sizeof(tau));

    double rn = 0.0, rho0 = 1.0, alpha = 0.0, omega = 1.0;
    SAP_TRY(sap__krylov_residual(s, s->x, &r[0], tmp, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    SAP_TRY(ops->copy(ctx, &r[0], rhat));
    if (right) SAP_TRY(ops->set(ctx, y, 0.0));
    SAP_TRY(ops->set(ctx, &u[0], 0.0));
    for (;;) {
        const double base = s->iter;
        rho0 = -omega * rho0;
        /* ---- BiCG part ---- */
        for (int j = 0; j < l; j++) {
            double rho1 = 0.0, g = 0.0;
            SAP_TRY(ops->dot(ctx, rhat, &r[j], &rho1));
            KRY_SCALAR(s, "rho0", rho0, 1);
            KRY_SCALAR(s, "rho = r0hat . r_j", rho1, 1);
            const double beta = alpha * rho1 / rho0;
            KRY_SCALAR(s, "beta", beta, 0);
            rho0 = rho1;
            for (int i = 0; i <= j; i++) SAP_TRY(ops->axpby(ctx, 1.0, &r[i], -beta, &u[i]));
            SAP_TRY(sap__krylov_op(s, &u[j], &u[j + 1], tmp));
            SAP_TRY(ops->dot(ctx, rhat, &u[j + 1], &g));
            KRY_SCALAR(s, "gamma = r0hat . u_{j+1}", g, 1);
            alpha = rho0 / g;
            KRY_SCALAR(s, "alpha", alpha, 0);
            for (int i = 1; i <= j; i++) SAP_TRY(ops->axpby(ctx, -alpha, &u[i + 1], 1.0, &r[i]));
            SAP_TRY(ops->axpby_nrm2(ctx, -alpha, &u[1], 1.0, &r[0], &rn));
            SAP_TRY(ops->axpby(ctx, alpha, &u[0], 1.0, xs));
            if (sap__krylov_check(s, base + (double)(j + 1) / (2.0 * l), rn)) goto done;
            SAP_TRY(sap__krylov_op(s, &r[j], &r[j + 1], tmp));
        }
        /* ---- MR part: modified Gram-Schmidt on r_1..r_l ---- */
        double est2 = rn * rn;
        int soft_restart = 0;
        for (int j = 1; j <= l; j++) {
            int k = 0;
            list[k++] = r[j];
            list[k++] = r[0];
            for (int i = j + 1; i <= l; i++) list[k++] = r[i];
            SAP_TRY(ops->mdot(ctx, k, list, &r[j], dd));
            sigma[j] = dd[0];
            KRY_SCALAR(s, "sigma_j = r_j . r_j", sigma[j], 1);
            gp[j] = dd[1] / sigma[j];
            KRY_SCALAR(s, "gamma'_j", gp[j], 0);
            for (int i = j + 1; i <= l; i++) {
                tau[j][i] = dd[2 + i - j - 1] / sigma[j];
                SAP_TRY(ops->axpby(ctx, -tau[j][i], &r[j], 1.0, &r[i]));
            }
            est2 -= gp[j] * gp[j] * sigma[j];
            if (j < l && sqrt(est2 > 0.0 ? est2 : 0.0) / s->refnorm <= s->tol) {
                /* the truncated polynomial of degree j already reaches the tolerance */
                mr_coefficients(j, tau, gp, gamma, gpp);
                SAP_TRY(mr_update(s, j, r, u, xs, gamma, gpp, gp, &rn));
                if (sap__krylov_check(s, base + (double)(l + j) / (2.0 * l), rn)) goto done;
                soft_restart = 1;
                break;
            }
        }
        if (!soft_restart) {
            mr_coefficients(l, tau, gp, gamma, gpp);
            SAP_TRY(mr_update(s, l, r, u, xs, gamma, gpp, gp, &rn));
            omega = gamma[l];
            if (sap__krylov_check(s, base + 1.0, rn)) goto done;
        } else if (sap__krylov_check(s, base + 1.0, rn)) {
            goto done; /* the end of this iteration (same residual as at the MR exit) */
        }
        SAP_TRY(sap__krylov_track_best(s, xs));
        if (soft_restart) {
            /* the recurrences assume a degree-l polynomial: start them again from here */
            rho0 = 1.0;
            alpha = 0.0;
            omega = 1.0;
            SAP_TRY(ops->set(ctx, &u[0], 0.0));
        } else {
            KRY_SCALAR(s, "omega = gamma_l", omega, 1);
        }
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, xs));
    if (right) {
        /* x = x0 + M^-1 y */
        SAP_TRY(sap__krylov_prec(s, y, tmp));
        SAP_TRY(ops->axpby(ctx, 1.0, tmp, 1.0, s->x));
    }
cleanup:
    return st;
}

/* ---- k columns in lockstep (krylov_many.c) -------------------------------------------------
 * The same iteration for every active column, each with its own scalars: the operator is
 * applied to whole blocks, the updates through the column kernels (a zero coefficient for
 * the columns that stopped).  In the MR part every column takes its own degree (truncated
 * where its estimate reaches the tolerance), as bicgstabl_run does. */
typedef struct col_state {
    double rho0, alpha, omega, base, est2;
    double tau[LMAX + 1][LMAX + 1], sigma[LMAX + 1], gp[LMAX + 1], gamma[LMAX + 1], gpp[LMAX + 1];
    int deg; /* degree of this iteration's MR step (0: none, the column stopped) */
    int mr;  /* still orthogonalising */
} col_state;

/* Y_c += a[c] X_c for the active columns; skipped when every a[c] is 0 */
static sap_status many_add(kry_many *km, const double *a, const sap_vec *X, sap_vec *Y)
{
    double one[KRY_MANY_MAX];
    int any = 0;
    for (int c = 0; c < km->k; c++) {
        one[c] = 1.0;
        any |= km->active[c] && a[c] != 0.0;
    }
    return any ? sap__krylov_many_axpby(km, a, X, one, Y) : SAP_OK;
}

static sap_status bicgstabl_run_many(kry_many *km)
{
    const sap_backend_ops *ops = km->ops;
    sap_context *ctx = km->ctx;
    sap_status st = SAP_OK;
    const int l = km->K->param, k = km->k;
    const sap_int n = km->n;
    sap_vec *r = &km->W[0], *u = &km->W[l + 1];
    sap_vec *rhat = &km->W[2 * l + 2], *Y = &km->W[2 * l + 3], *tmp = &km->W[2 * l + 4];
    const int right = km->side == KRY_SIDE_RIGHT;
    sap_vec *xs = right ? Y : &km->X;
    col_state *cs = NULL;
    int ran[KRY_MANY_MAX];
    double rn[KRY_MANY_MAX], a[KRY_MANY_MAX], b[KRY_MANY_MAX], one[KRY_MANY_MAX], dd[8 * KRY_MANY_MAX];
    SAP_CALLOC(ctx, cs, k);
    for (int c = 0; c < k; c++) {
        ran[c] = km->active[c];
        one[c] = 1.0;
        cs[c].rho0 = 1.0;
        cs[c].omega = 1.0;
    }
    SAP_TRY(sap__krylov_many_residual(km, &km->X, &r[0], tmp, rn));
    for (int c = 0; c < k; c++)
        if (km->active[c] && sap__krylov_start(&km->col[c], rn[c])) sap__krylov_many_stop(km, c);
    SAP_TRY(ops->copy(ctx, &r[0], rhat));
    if (right) SAP_TRY(ops->set(ctx, Y, 0.0));
    SAP_TRY(ops->set(ctx, &u[0], 0.0));
    while (sap__krylov_many_count(km) > 0) {
        for (int c = 0; c < k; c++) {
            cs[c].base = km->col[c].iter;
            cs[c].rho0 = -cs[c].omega * cs[c].rho0;
        }
        /* ---- BiCG part ---- */
        for (int j = 0; j < l; j++) {
            SAP_TRY(ops->cdot(ctx, k, 1, rhat, &r[j], dd));
            for (int c = 0; c < k; c++) {
                b[c] = 0.0;
                if (!km->active[c] || sap__krylov_many_scalar(km, c, "rho0", cs[c].rho0, 1) ||
                    sap__krylov_many_scalar(km, c, "rho = r0hat . r_j", dd[c], 1))
                    continue;
                const double beta = cs[c].alpha * dd[c] / cs[c].rho0;
                if (sap__krylov_many_scalar(km, c, "beta", beta, 0)) continue;
                cs[c].rho0 = dd[c];
                b[c] = -beta;
            }
            for (int i = 0; i <= j; i++) SAP_TRY(sap__krylov_many_axpby(km, one, &r[i], b, &u[i]));
            SAP_TRY(sap__krylov_many_op(km, &u[j], &u[j + 1], tmp));
            SAP_TRY(ops->cdot(ctx, k, 1, rhat, &u[j + 1], dd));
            for (int c = 0; c < k; c++) {
                if (!km->active[c] || sap__krylov_many_scalar(km, c, "gamma = r0hat . u_{j+1}", dd[c], 1)) continue;
                cs[c].alpha = cs[c].rho0 / dd[c];
                sap__krylov_many_scalar(km, c, "alpha", cs[c].alpha, 0);
            }
            for (int c = 0; c < k; c++) a[c] = -cs[c].alpha;
            for (int i = 1; i <= j; i++) SAP_TRY(many_add(km, a, &u[i + 1], &r[i]));
            SAP_TRY(many_add(km, a, &u[1], &r[0]));
            SAP_TRY(sap__krylov_many_nrm2(km, &r[0], rn));
            for (int c = 0; c < k; c++) a[c] = cs[c].alpha;
            SAP_TRY(many_add(km, a, &u[0], xs));
            for (int c = 0; c < k; c++)
                if (km->active[c] &&
                    sap__krylov_check(&km->col[c], cs[c].base + (double)(j + 1) / (2.0 * l), rn[c]))
                    sap__krylov_many_stop(km, c);
            if (sap__krylov_many_monitor(km)) goto done;
            SAP_TRY(sap__krylov_many_op(km, &r[j], &r[j + 1], tmp));
        }
        /* ---- MR part: modified Gram-Schmidt on r_1..r_l, every column its own degree ---- */
        for (int c = 0; c < k; c++) {
            cs[c].est2 = rn[c] * rn[c];
            cs[c].deg = 0;
            cs[c].mr = km->active[c];
        }
        for (int j = 1; j <= l; j++) {
            sap_vec list[LMAX + 2];
            int nl = 0;
            list[nl++] = r[j];
            list[nl++] = r[0];
            for (int i = j + 1; i <= l; i++) list[nl++] = r[i];
            for (int i0 = 0; i0 < nl; i0 += 8) /* dd[i k + c] = list[i]_c . r[j]_c */
                SAP_TRY(ops->cdot(ctx, k, nl - i0 < 8 ? nl - i0 : 8, list + i0, &r[j], dd + (size_t)i0 * k));
            for (int c = 0; c < k; c++) {
                col_state *q = &cs[c];
                if (!q->mr) continue;
                q->sigma[j] = dd[c];
                if (sap__krylov_many_scalar(km, c, "sigma_j = r_j . r_j", q->sigma[j], 1)) {
                    q->mr = 0;
                    continue;
                }
                q->gp[j] = dd[k + c] / q->sigma[j];
                if (sap__krylov_many_scalar(km, c, "gamma'_j", q->gp[j], 0)) {
                    q->mr = 0;
                    continue;
                }
                for (int i = j + 1; i <= l; i++) q->tau[j][i] = dd[(size_t)(2 + i - j - 1) * k + c] / q->sigma[j];
            }
            for (int i = j + 1; i <= l; i++) {
                for (int c = 0; c < k; c++) a[c] = cs[c].mr ? -cs[c].tau[j][i] : 0.0;
                SAP_TRY(many_add(km, a, &r[j], &r[i]));
            }
            for (int c = 0; c < k; c++) {
                col_state *q = &cs[c];
                if (!q->mr) continue;
                q->est2 -= q->gp[j] * q->gp[j] * q->sigma[j];
                if (j < l && sqrt(q->est2 > 0.0 ? q->est2 : 0.0) / km->col[c].refnorm <= km->col[c].tol) {
                    q->deg = j; /* the truncated polynomial of degree j reaches the tolerance */
                    q->mr = 0;
                }
            }
        }
        for (int c = 0; c < k; c++) {
            if (cs[c].mr) cs[c].deg = l;
            if (km->active[c] && cs[c].deg > 0) mr_coefficients(cs[c].deg, cs[c].tau, cs[c].gp, cs[c].gamma, cs[c].gpp);
        }
        /* the MR update of every column's degree d: xs += gamma_1 r_0 + sum_{i<d} gamma''_i r_i,
         * u_0 -= sum_{i<=d} gamma_i u_i, r_0 -= sum_{i<=d} gamma'_i r_i */
        for (int i = 0; i < l; i++) {
            for (int c = 0; c < k; c++)
                a[c] = cs[c].deg == 0 ? 0.0 : i == 0 ? cs[c].gamma[1] : (i < cs[c].deg ? cs[c].gpp[i] : 0.0);
            SAP_TRY(many_add(km, a, &r[i], xs));
        }
        for (int i = 1; i <= l; i++) {
            for (int c = 0; c < k; c++) a[c] = i <= cs[c].deg ? -cs[c].gamma[i] : 0.0;
            SAP_TRY(many_add(km, a, &u[i], &u[0]));
        }
        for (int i = 1; i <= l; i++) {
            for (int c = 0; c < k; c++) a[c] = i <= cs[c].deg ? -cs[c].gp[i] : 0.0;
            SAP_TRY(many_add(km, a, &r[i], &r[0]));
        }
        SAP_TRY(sap__krylov_many_nrm2(km, &r[0], rn));
        for (int c = 0; c < k; c++) {
            col_state *q = &cs[c];
            if (!km->active[c]) continue;
            kry_solve *s = &km->col[c];
            if (q->deg == l) {
                q->omega = q->gamma[l];
                if (sap__krylov_check(s, q->base + 1.0, rn[c])) sap__krylov_many_stop(km, c);
            } else if (sap__krylov_check(s, q->base + (double)(l + q->deg) / (2.0 * l), rn[c]) ||
                       sap__krylov_check(s, q->base + 1.0, rn[c])) {
                sap__krylov_many_stop(km, c);
            }
        }
        if (sap__krylov_many_monitor(km)) goto done;
        for (int c = 0; c < k; c++) {
            if (!km->active[c]) continue;
            col_state *q = &cs[c];
            const sap_vec xc = sap__vec_column(xs, n, c);
            SAP_TRY(sap__krylov_track_best(&km->col[c], &xc));
            if (q->deg < l) {
                /* the recurrences assume a degree-l polynomial: start them again from here */
                q->rho0 = 1.0;
                q->alpha = 0.0;
                q->omega = 1.0;
                sap_vec uc = sap__vec_column(&u[0], n, c);
                SAP_TRY(ops->set(ctx, &uc, 0.0));
            } else {
                sap__krylov_many_scalar(km, c, "omega = gamma_l", q->omega, 1);
            }
        }
    }
done:
    for (int c = 0; c < k; c++) {
        if (!ran[c]) continue;
        sap_vec xc = sap__vec_column(xs, n, c);
        SAP_TRY(sap__krylov_restore_best(&km->col[c], &xc));
    }
    if (right) {
        /* x = x0 + M^-1 y for the columns this call solved */
        SAP_TRY(sap__krylov_many_prec(km, Y, tmp));
        for (int c = 0; c < k; c++) a[c] = ran[c] ? 1.0 : 0.0;
        SAP_TRY(ops->caxpby(ctx, k, a, tmp, one, &km->X));
    }
cleanup:
    sap__free(ctx, cs);
    return st;
}

static int bicgstabl_nvec(int l) { return 2 * (l + 1) + 3; }

const sap_krylov_method sap__krylov_bicgstabl_method = {
    .name = "bicgstabl", .help = "BiCGStab(l) (iterations in steps of 1/(2l))", .id = SAP_KRYLOV_BICGSTABL,
    .default_param = 2, .max_param = 16, .nvec = bicgstabl_nvec, .steps = 4,
    .sides = KRY_SIDES_LEFT | KRY_SIDES_RIGHT, .run = bicgstabl_run,
    .run_many = bicgstabl_run_many};
