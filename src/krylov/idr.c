/* idr.c -- IDR(s) with biorthogonalisation (van Gijzen and Sonneveld 2011, ACM TOMS 38:5,
 * Algorithm 913), s = 4 by default, with right, left or no preconditioning.
 *
 * One iteration = one SpMV (s+1 per cycle: s steps in the space G_j, then the
 * dimension-reduction step), as the paper's idrs.m counts.  The shadow space P: s
 * vectors uniform in [-1, 1] from a fixed-seed generator, orthonormalised on the host
 * (deterministic, independent of the thread count and the backend) and kept in the
 * sap_krylov object across solves of the same size.  omega uses the "maintaining the
 * convergence" strategy with kappa = 0.7.  Right preconditioning updates x directly
 * (v = M^-1 v before U is formed) and monitors the true residual; left monitors
 * ||M^-1 r|| / ||M^-1 b||.  Breakdown: M(k,k) = p_k . g_k = 0, t = 0, omega = 0. */
#include "krylov/krylov_impl.h"

#include <string.h>

#define SMAX 64
#define IDR_SEED 0x1D5A5EEDULL
#define KAPPA 0.7

sap_status sap__krylov_idr_shadow(kry_solve *s, int ns)
{
    sap_krylov *K = s->K;
    sap_context *ctx = s->ctx;
    const sap_backend_ops *ops = s->ops;
    if (K->shadow && K->nshadow == ns && K->shadow[0].n == s->n && K->shadow[0].prec == s->A->prec) return SAP_OK;
    for (int i = 0; i < K->nshadow; i++)
        if (K->shadow[i].data) ops->vec_destroy(ctx, &K->shadow[i]);
    sap__free(ctx, K->shadow);
    K->shadow = NULL;
    K->nshadow = 0;
    sap_status st = SAP_OK;
    const sap_int n = s->n;
    double *Q = NULL;
    SAP_ALLOC(ctx, Q, (size_t)n * (size_t)ns);
    sap_rng rng;
    sap__rng_seed(&rng, IDR_SEED);
    for (sap_int i = 0; i < n * ns; i++) Q[i] = 2.0 * sap__rng_uniform(&rng) - 1.0;
    /* modified Gram-Schmidt, twice for safety */
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < ns; j++) {
            double *qj = Q + (size_t)j * (size_t)n;
            for (int i = 0; i < j; i++) {
                const double *qi = Q + (size_t)i * (size_t)n;
                double d = 0.0;
                for (sap_int k = 0; k < n; k++) d += qi[k] * qj[k];
                for (sap_int k = 0; k < n; k++) qj[k] -= d * qi[k];
            }
            double nn = 0.0;
            for (sap_int k = 0; k < n; k++) nn += qj[k] * qj[k];
            nn = sqrt(nn);
            /* n < s leaves dependent columns: keep them (p_k . g_k = 0 then breaks down) */
            if (nn > 0.0)
                for (sap_int k = 0; k < n; k++) qj[k] /= nn;
        }
    SAP_CALLOC(ctx, K->shadow, ns);
    K->nshadow = ns;
    for (int j = 0; j < ns; j++) {
        SAP_TRY(ops->vec_create(ctx, n, s->A->prec, &K->shadow[j]));
        SAP_TRY(ops->vec_upload(ctx, &K->shadow[j], Q + (size_t)j * (size_t)n));
    }
cleanup:
    sap__free(ctx, Q);
    if (st < 0 && K->shadow) {
        for (int i = 0; i < K->nshadow; i++)
            if (K->shadow[i].data) ops->vec_destroy(ctx, &K->shadow[i]);
        sap__free(ctx, K->shadow);
        K->shadow = NULL;
        K->nshadow = 0;
    }
    return st;
}

static sap_status idr_run(kry_solve *s)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    const int ns = s->K->param;
    sap_vec *G = s->w, *U = s->w + ns;
    sap_vec *r = &s->w[2 * ns], *v = r + 1, *t = r + 2, *tmp = r + 3, *x = s->x;
    const int right = s->side == KRY_SIDE_RIGHT;
    double M[SMAX * SMAX], f[SMAX], c[SMAX], a[SMAX], d[2];

    double rn = 0.0, om = 1.0;
    SAP_TRY(sap__krylov_residual(s, x, r, tmp, &rn));
    if (sap__krylov_start(s, rn)) goto done;
    SAP_TRY(sap__krylov_idr_shadow(s, ns));
    const sap_vec *P = s->K->shadow;
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++) M[i + j * ns] = i == j ? 1.0 : 0.0;
    SAP_TRY(sap__krylov_mdot(s, ns, P, r, f));
    for (;;) {
        for (int k = 0; k < ns; k++) {
            /* c = M(k:s, k:s) \ f(k:s), lower triangular */
            for (int i = k; i < ns; i++) {
                double q = f[i];
                for (int j = k; j < i; j++) q -= M[i + j * ns] * c[j];
                c[i] = q / M[i + i * ns];
            }
            /* v = r - G(:, k:s) c */
            SAP_TRY(ops->copy(ctx, r, v));
            for (int i = k; i < ns; i++) a[i - k] = -c[i];
            SAP_TRY(sap__krylov_maxpy(s, ns - k, a, &G[k], v));
            sap_vec *vp = v;
            if (right) {
                SAP_TRY(sap__krylov_prec(s, v, tmp));
                vp = tmp;
            }
            /* U(:, k) = U(:, k:s) c + om v  (built in vp, then swapped in) */
            SAP_TRY(ops->scale(ctx, vp, om));
            SAP_TRY(sap__krylov_maxpy(s, ns - k, c + k, &U[k], vp));
            sap_vec sw = U[k];
            U[k] = *vp;
            *vp = sw;
            /* G(:, k) = A U(:, k) (U holds preconditioned vectors when right) or M^-1 A U(:, k) */
            if (right) SAP_TRY(sap__krylov_spmv(s, &U[k], &G[k]));
            else SAP_TRY(sap__krylov_op(s, &U[k], &G[k], tmp));
            /* biorthogonalise G(:, k) against p_1..p_{k-1} */
            for (int i = 0; i < k; i++) {
                double pg = 0.0;
                SAP_TRY(ops->dot(ctx, &P[i], &G[k], &pg));
                a[i] = pg / M[i + i * ns];
                KRY_SCALAR(s, "alpha = p_i . g_k / M(i,i)", a[i], 0);
                SAP_TRY(ops->axpby(ctx, -a[i], &G[i], 1.0, &G[k]));
                a[i] = -a[i];
            }
            SAP_TRY(sap__krylov_maxpy(s, k, a, U, &U[k]));
            /* M(k:s, k) = P(:, k:s)^T G(:, k) */
            SAP_TRY(sap__krylov_mdot(s, ns - k, &P[k], &G[k], &M[k + k * ns]));
            KRY_SCALAR(s, "M(k,k) = p_k . g_k", M[k + k * ns], 1);
            const double beta = f[k] / M[k + k * ns];
            KRY_SCALAR(s, "beta", beta, 0);
            SAP_TRY(ops->axpby(ctx, beta, &U[k], 1.0, x));
            SAP_TRY(ops->axpby_nrm2(ctx, -beta, &G[k], 1.0, r, &rn));
            if (sap__krylov_check(s, s->iter + 1.0, rn)) goto done;
            SAP_TRY(sap__krylov_track_best(s, x));
            for (int i = k + 1; i < ns; i++) f[i] -= beta * M[i + k * ns];
        }
        /* dimension reduction: v = M^-1 r (right) or r, t = A v (or M^-1 A r) */
        sap_vec *vv = r;
        if (right) {
            SAP_TRY(sap__krylov_prec(s, r, v));
            SAP_TRY(sap__krylov_spmv(s, v, t));
            vv = v;
        } else {
            SAP_TRY(sap__krylov_op(s, r, t, tmp));
        }
        const sap_vec tr[2] = {*t, *r};
        SAP_TRY(ops->mdot(ctx, 2, tr, t, d)); /* t.t, r.t */
        KRY_SCALAR(s, "t . t", d[0], 1);
        const double nt = sqrt(d[0]);
        om = d[1] / d[0];
        const double rho = fabs(d[1]) / (nt * rn);
        if (rho < KAPPA && rho > 0.0) om *= KAPPA / rho;
        KRY_SCALAR(s, "omega", om, 1);
        SAP_TRY(ops->axpby(ctx, om, vv, 1.0, x));
        SAP_TRY(ops->axpby_nrm2(ctx, -om, t, 1.0, r, &rn));
        if (sap__krylov_check(s, s->iter + 1.0, rn)) goto done;
        SAP_TRY(sap__krylov_track_best(s, x));
        SAP_TRY(sap__krylov_mdot(s, ns, P, r, f));
    }
done:
    SAP_TRY(sap__krylov_restore_best(s, x));
cleanup:
    return st;
}

static int idr_nvec(int s) { return 3 * s + 4; }

const sap_krylov_method sap__krylov_idr_method = {
    .name = "idr", .help = "IDR(s) (one iteration per SpMV)", .id = SAP_KRYLOV_IDR, .default_param = 4,
    .max_param = 64, .nvec = idr_nvec, .steps = 1, .sides = KRY_SIDES_LEFT | KRY_SIDES_RIGHT, .run = idr_run};
