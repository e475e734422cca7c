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
 * ||M^-1 r|| / ||M^-1 b||.  Breakdown: M(k,k) = p_k . g_k = 0, t = 0, omega = 0.  A
 * lockstep form for k right-hand sides (idr_run_many). */
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
        const sap_vec *vv = NULL;
        SAP_TRY(sap__krylov_op_hat(s, r, t, v, tmp, &vv));
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

/* x += c u, r += mc g (mc = -c) for the active columns, ||r||, the checks, the monitor
 * (*all: no column left) and the best iterates: the end of each IDR step in lockstep. */
static sap_status idr_many_step(kry_many *km, const double *c, const sap_vec *u, const double *mc, const sap_vec *g,
                                sap_vec *R, double *rn, int *all)
{
    double one[KRY_MANY_MAX];
    for (int q = 0; q < km->k; q++) one[q] = 1.0;
    sap_status st = sap__krylov_many_axpby(km, c, u, one, &km->X);
    if (st >= 0) st = sap__krylov_many_axpby(km, mc, g, one, R);
    if (st >= 0) st = sap__krylov_many_nrm2(km, R, rn);
    if (st < 0) return st;
    sap__krylov_many_check(km, NULL, 1.0, rn);
    *all = sap__krylov_many_monitor(km);
    return *all ? SAP_OK : sap__krylov_many_track_best(km);
}

/* The same for k columns in lockstep (krylov_many.c): one SpMM and one block preconditioner
 * apply per step for all columns; the small matrices M, f, c, omega, the biorthogonalisation
 * and the stop are each column's own (dot / maxpy / mdot on its column views, as the single
 * solve's), the shadow space P is shared. */
static sap_status idr_run_many(kry_many *km)
{
    const sap_backend_ops *ops = km->ops;
    sap_context *ctx = km->ctx;
    sap_status st = SAP_OK;
    const int k = km->k, ns = km->K->param;
    const sap_int n = km->n;
    sap_vec *G = km->W, *U = km->W + ns;
    sap_vec *R = &km->W[2 * ns], *V = R + 1, *T = R + 2, *TMP = R + 3;
    const int right = km->side == KRY_SIDE_RIGHT;
    double *Mq = NULL, *fq = NULL, *cq = NULL;
    sap_vec *Gc = NULL, *Uc = NULL;
    double rn[KRY_MANY_MAX], om[KRY_MANY_MAX], beta[KRY_MANY_MAX], mb[KRY_MANY_MAX], one[KRY_MANY_MAX];
    double a[SMAX], d[2 * KRY_MANY_MAX];
    SAP_ALLOC(ctx, Mq, (size_t)k * (size_t)ns * (size_t)ns);
    SAP_ALLOC(ctx, fq, (size_t)k * (size_t)ns);
    SAP_ALLOC(ctx, cq, (size_t)k * (size_t)ns);
    SAP_ALLOC(ctx, Gc, (size_t)ns);
    SAP_ALLOC(ctx, Uc, (size_t)ns);
    SAP_TRY(sap__krylov_many_residual(km, &km->X, R, TMP, rn));
    int first = -1;
    for (int q = 0; q < k; q++) {
        om[q] = one[q] = 1.0;
        if (km->active[q] && sap__krylov_start(&km->col[q], rn[q])) sap__krylov_many_stop(km, q);
        if (km->active[q] && first < 0) first = q;
    }
    if (first < 0) goto done;
    SAP_TRY(sap__krylov_idr_shadow(&km->col[first], ns));
    const sap_vec *P = km->K->shadow;
#define MQ(q) (Mq + (size_t)(q) * (size_t)ns * (size_t)ns)
#define FQ(q) (fq + (size_t)(q) * (size_t)ns)
#define CQ(q) (cq + (size_t)(q) * (size_t)ns)
#define VIEWS(q)                                                                                                       \
    for (int i_ = 0; i_ < ns; i_++) {                                                                                  \
        Gc[i_] = sap__vec_column(&G[i_], n, q);                                                                        \
        Uc[i_] = sap__vec_column(&U[i_], n, q);                                                                        \
    }
    for (int q = 0; q < k; q++) {
        double *M = MQ(q);
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < ns; j++) M[i + j * ns] = i == j ? 1.0 : 0.0;
        if (!km->active[q]) continue;
        const sap_vec rq = sap__vec_column(R, n, q);
        SAP_TRY(sap__krylov_mdot(&km->col[q], ns, P, &rq, FQ(q)));
    }
    while (sap__krylov_many_count(km) > 0) {
        for (int kk = 0; kk < ns; kk++) {
            /* c = M(k:s, k:s) \ f(k:s); v = r - G(:, k:s) c */
            SAP_TRY(ops->copy(ctx, R, V));
            for (int q = 0; q < k; q++) {
                if (!km->active[q]) continue;
                const double *M = MQ(q), *f = FQ(q);
                double *c = CQ(q);
                for (int i = kk; i < ns; i++) {
                    double x = f[i];
                    for (int j = kk; j < i; j++) x -= M[i + j * ns] * c[j];
                    c[i] = x / M[i + i * ns];
                }
                for (int i = kk; i < ns; i++) a[i - kk] = -c[i];
                VIEWS(q);
                sap_vec vq = sap__vec_column(V, n, q);
                SAP_TRY(sap__krylov_maxpy(&km->col[q], ns - kk, a, &Gc[kk], &vq));
            }
            sap_vec *vp = V;
            if (right) {
                SAP_TRY(sap__krylov_many_prec(km, V, TMP));
                vp = TMP;
            }
            /* U(:, k) = U(:, k:s) c + om v (built in vp, then swapped in) */
            for (int q = 0; q < k; q++) {
                if (!km->active[q]) continue;
                VIEWS(q);
                sap_vec pq = sap__vec_column(vp, n, q);
                SAP_TRY(ops->scale(ctx, &pq, om[q]));
                SAP_TRY(sap__krylov_maxpy(&km->col[q], ns - kk, CQ(q) + kk, &Uc[kk], &pq));
            }
            sap_vec sw = U[kk];
            U[kk] = *vp;
            *vp = sw;
            if (right) SAP_TRY(sap__krylov_many_spmm(km, &U[kk], &G[kk]));
            else SAP_TRY(sap__krylov_many_op(km, &U[kk], &G[kk], TMP));
            for (int q = 0; q < k; q++) {
                beta[q] = mb[q] = 0.0;
                if (!km->active[q]) continue;
                kry_solve *s = &km->col[q];
                double *M = MQ(q);
                VIEWS(q);
                /* biorthogonalise G(:, k) against p_1..p_{k-1} */
                int bad = 0;
                for (int i = 0; i < kk && !bad; i++) {
                    double pg = 0.0;
                    SAP_TRY(ops->dot(ctx, &P[i], &Gc[kk], &pg));
                    a[i] = pg / M[i + i * ns];
                    if (sap__krylov_many_scalar(km, q, "alpha = p_i . g_k / M(i,i)", a[i], 0)) bad = 1;
                    else SAP_TRY(ops->axpby(ctx, -a[i], &Gc[i], 1.0, &Gc[kk]));
                    a[i] = -a[i];
                }
                if (bad) continue;
                SAP_TRY(sap__krylov_maxpy(s, kk, a, Uc, &Uc[kk]));
                /* M(k:s, k) = P(:, k:s)^T G(:, k) */
                SAP_TRY(sap__krylov_mdot(s, ns - kk, &P[kk], &Gc[kk], &M[kk + kk * ns]));
                if (sap__krylov_many_scalar(km, q, "M(k,k) = p_k . g_k", M[kk + kk * ns], 1)) continue;
                beta[q] = FQ(q)[kk] / M[kk + kk * ns];
                if (sap__krylov_many_scalar(km, q, "beta", beta[q], 0)) continue;
                mb[q] = -beta[q];
            }
            int all = 0;
            SAP_TRY(idr_many_step(km, beta, &U[kk], mb, &G[kk], R, rn, &all));
            if (all) goto done;
            for (int q = 0; q < k; q++) {
                if (!km->active[q]) continue;
                const double *M = MQ(q);
                double *f = FQ(q);
                for (int i = kk + 1; i < ns; i++) f[i] -= beta[q] * M[i + kk * ns];
            }
        }
        /* dimension reduction: v = M^-1 r (right) or r, t = A v (or M^-1 A r) */
        const sap_vec *vv = NULL;
        SAP_TRY(sap__krylov_many_op_hat(km, R, T, V, TMP, &vv));
        const sap_vec tr[2] = {*T, *R};
        SAP_TRY(ops->cdot(ctx, k, 2, tr, T, d)); /* t.t, r.t */
        for (int q = 0; q < k; q++) {
            beta[q] = mb[q] = 0.0;
            if (!km->active[q] || sap__krylov_many_scalar(km, q, "t . t", d[q], 1)) continue;
            const double nt = sqrt(d[q]);
            om[q] = d[k + q] / d[q];
            const double rho = fabs(d[k + q]) / (nt * rn[q]);
            if (rho < KAPPA && rho > 0.0) om[q] *= KAPPA / rho;
            if (sap__krylov_many_scalar(km, q, "omega", om[q], 1)) continue;
            beta[q] = om[q];
            mb[q] = -om[q];
        }
        int all = 0;
        SAP_TRY(idr_many_step(km, beta, vv, mb, T, R, rn, &all));
        if (all) goto done;
        for (int q = 0; q < k; q++) {
            if (!km->active[q]) continue;
            const sap_vec rq = sap__vec_column(R, n, q);
            SAP_TRY(sap__krylov_mdot(&km->col[q], ns, P, &rq, FQ(q)));
        }
    }
#undef VIEWS
#undef CQ
#undef FQ
#undef MQ
done:
    SAP_TRY(sap__krylov_many_restore_best(km));
cleanup:
    sap__free(ctx, Mq);
    sap__free(ctx, fq);
    sap__free(ctx, cq);
    sap__free(ctx, Gc);
    sap__free(ctx, Uc);
    return st;
}

static int idr_nvec(int s) { return 3 * s + 4; }

const sap_krylov_method sap__krylov_idr_method = {
    .name = "idr", .help = "IDR(s) (one iteration per SpMV)", .id = SAP_KRYLOV_IDR, .default_param = 4,
    .max_param = 64, .nvec = idr_nvec, .steps = 1, .sides = KRY_SIDES_LEFT | KRY_SIDES_RIGHT, .run = idr_run,
    .run_many = idr_run_many};
