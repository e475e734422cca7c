/* gmres.c -- restarted GMRES(m) (Saad and Schultz 1986; m = 20 by default) with left,
 * right or no preconditioning, and flexible FGMRES(m) (Saad 1993; m = 30; right only:
 * it keeps z_j = M^-1 v_j, so the preconditioner may change between applications).
 *
 * Arnoldi with classical Gram-Schmidt and selective reorthogonalisation (DGKS): one mdot
 * gives h = V^T w together with w.w, w -= V h by maxpy, and a second pass is made when
 * the projection removed more than half of ||w||^2 (||w'|| < ||w|| / sqrt 2); without it
 * h_{j+1,j} = sqrt(w.w - h.h) needs no pass over w.  Givens rotations on the host give the
 * residual estimate |g_{j+1}| after every step (one iteration = one Arnoldi step = one
 * SpMV); the iterate is formed at the end of a cycle
 * or at an exit.  Right preconditioning and FGMRES monitor the true residual norm, left
 * ||M^-1 r|| / ||M^-1 b||.  h_{j+1,j} = 0 ("happy" breakdown) ends the cycle: the
 * estimate is then exact; a singular Hessenberg matrix is SAP_WARN_BREAKDOWN.  Both have a
 * lockstep form for k right-hand sides (gmres_many_common). */
#include "krylov/krylov_impl.h"

#include <string.h>

static sap_status hwork(kry_solve *s, size_t len, double **out)
{
    sap_krylov *K = s->K;
    if (K->hwork_len < len) {
        sap__free(s->ctx, K->hwork);
        K->hwork_len = 0;
        K->hwork = sap__alloc(s->ctx, len, sizeof(double), true, __FILE__, __LINE__);
        if (!K->hwork) return SAP_ERR_OUT_OF_MEMORY;
        K->hwork_len = len;
    }
    *out = K->hwork;
    return SAP_OK;
}

/* One column's host state of a cycle: the Hessenberg matrix H ((m + 1) x m, Givens-rotated
 * to upper triangular as it grows), the rotations (cs, sn), the rotated right-hand side g
 * (|g_{j+1}| is the residual estimate) and scratch (yv, h, h2). */
typedef struct gm_col {
    double *H, *cs, *sn, *g, *yv, *h, *h2;
} gm_col;
static size_t gm_col_len(int m) { return ((size_t)m + 1) * (size_t)m + 6 * (size_t)m + 8; }
static gm_col gm_col_at(double *w, int m)
{
    gm_col c;
    c.H = w;
    c.cs = c.H + ((size_t)m + 1) * (size_t)m;
    c.sn = c.cs + m;
    c.g = c.sn + m;
    c.yv = c.g + m + 1;
    c.h = c.yv + m;
    c.h2 = c.h + m + 2;
    return c;
}

/* Arnoldi step j of one column: w = op(v_j) is orthogonalised against V[0..j] (classical
 * Gram-Schmidt, h[j+1] = w.w from the same pass, DGKS second pass), normalised, and H(:, j)
 * rotated by the previous rotations and a new one.  *happy: h_{j+1,j} ~ 0.  A non-finite
 * scalar returns SAP_OK with *bad naming it (the caller breaks down). */
static sap_status gm_step(kry_solve *s, int m, int j, const sap_vec *V, sap_vec *w, gm_col *c, double happy_tol,
                          int *happy, const char **bad, double *badv)
{
    const sap_backend_ops *ops = s->ops;
    const size_t ld = (size_t)m + 1;
    double *h = c->h, *h2 = c->h2, *yv = c->yv;
    *bad = NULL;
    *happy = 0;
    sap_status st = sap__krylov_mdot(s, j + 2, V, w, h);
    if (st < 0) return st;
    const double ww = h[j + 1];
    if (!isfinite(ww)) {
        *bad = "||op(v_j)||^2";
        *badv = ww;
        return SAP_OK;
    }
    double proj = 0.0;
    for (int i = 0; i <= j; i++) {
        yv[i] = -h[i];
        proj += h[i] * h[i];
    }
    if ((st = sap__krylov_maxpy(s, j + 1, yv, V, w)) < 0) return st;
    double hn = 0.0;
    if (ww - proj < 0.5 * ww) {
        /* the projection cancelled much of w: orthogonalise once more, and measure it */
        if ((st = sap__krylov_mdot(s, j + 1, V, w, h2)) < 0) return st;
        for (int i = 0; i <= j; i++) {
            yv[i] = -h2[i];
            h[i] += h2[i];
        }
        if ((st = sap__krylov_maxpy(s, j + 1, yv, V, w)) < 0) return st;
        if ((st = ops->nrm2(s->ctx, w, &hn)) < 0) return st;
    } else {
        /* at most half of ||w||^2 projected out: ||w - V h||^2 = w.w - h.h loses at most a
         * bit to cancellation, so no pass over w (on a GPU a reduction and a wait less a step) */
        hn = sqrt(ww - proj);
    }
    if (!isfinite(hn)) {
        *bad = "h_{j+1,j}";
        *badv = hn;
        return SAP_OK;
    }
    double *Hj = c->H + (size_t)j * ld;
    for (int i = 0; i <= j; i++) Hj[i] = h[i];
    if (hn <= happy_tol * sqrt(ww)) {
        *happy = 1;
        hn = 0.0;
    } else if ((st = ops->scale(s->ctx, w, 1.0 / hn)) < 0) {
        return st;
    }
    Hj[j + 1] = hn;
    double *cs = c->cs, *sn = c->sn, *g = c->g;
    for (int i = 0; i < j; i++) {
        const double a = cs[i] * Hj[i] + sn[i] * Hj[i + 1];
        Hj[i + 1] = -sn[i] * Hj[i] + cs[i] * Hj[i + 1];
        Hj[i] = a;
    }
    const double a = Hj[j], b = Hj[j + 1];
    double cc = 1.0, sg = 0.0;
    if (b != 0.0) {
        if (fabs(b) > fabs(a)) {
            const double tt = a / b;
            sg = 1.0 / sqrt(1.0 + tt * tt);
            cc = sg * tt;
        } else {
            const double tt = b / a;
            cc = 1.0 / sqrt(1.0 + tt * tt);
            sg = cc * tt;
        }
    }
    cs[j] = cc;
    sn[j] = sg;
    Hj[j] = cc * a + sg * b;
    Hj[j + 1] = 0.0;
    g[j + 1] = -sg * g[j];
    g[j] = cc * g[j];
    return SAP_OK;
}

/* yv = H(0:kk, 0:kk)^-1 g on the leading nonsingular part; returns kk (< k: H(kk, kk) = 0). */
static int gm_solve(gm_col *c, int m, int k)
{
    const size_t ld = (size_t)m + 1;
    const double *H = c->H;
    int kk = k;
    for (int i = 0; i < k; i++)
        if (H[(size_t)i * ld + i] == 0.0) {
            kk = i;
            break;
        }
    for (int i = kk - 1; i >= 0; i--) {
        double v = c->g[i];
        for (int q = i + 1; q < kk; q++) v -= H[(size_t)q * ld + i] * c->yv[q];
        c->yv[i] = v / H[(size_t)i * ld + i];
    }
    return kk;
}

static sap_status gmres_common(kry_solve *s, int fgmres)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    const int m = s->K->param;
    const int flex = fgmres && s->P != NULL;
    sap_vec *V = s->w, *Z = fgmres ? s->w + m + 1 : NULL;
    sap_vec *t = &s->w[fgmres ? 2 * m + 1 : m + 1], *z2 = t + 1;
    double *hw = NULL;
    SAP_TRY(hwork(s, gm_col_len(m), &hw));
    gm_col c = gm_col_at(hw, m);
    const double happy_tol = s->A->prec == SAP_FLOAT ? 1e-6 : 1e-14;

    for (;;) {
        double beta = 0.0;
        SAP_TRY(sap__krylov_residual(s, s->x, &V[0], t, &beta));
        if (sap__krylov_start(s, beta)) goto done;
        SAP_TRY(ops->scale(ctx, &V[0], 1.0 / beta));
        memset(c.g, 0, sizeof(double) * ((size_t)m + 1));
        c.g[0] = beta;
        int k = 0, happy = 0, stop = 0;
        for (int j = 0; j < m; j++) {
            sap_vec *w = &V[j + 1];
            if (flex) {
                SAP_TRY(sap__krylov_prec(s, &V[j], &Z[j]));
                SAP_TRY(sap__krylov_spmv(s, &Z[j], w));
            } else {
                SAP_TRY(sap__krylov_op(s, &V[j], w, t));
            }
            const char *bad = NULL;
            double badv = 0.0;
            SAP_TRY(gm_step(s, m, j, V, w, &c, happy_tol, &happy, &bad, &badv));
            if (bad) {
                sap__krylov_breakdown(s, bad, badv);
                goto done;
            }
            k = j + 1;
            stop = sap__krylov_check(s, s->iter + 1.0, fabs(c.g[j + 1]));
            if (stop || happy) break;
        }
        const int kk = gm_solve(&c, m, k);
        if (flex) {
            SAP_TRY(sap__krylov_maxpy(s, kk, c.yv, Z, s->x));
        } else if (s->side == KRY_SIDE_RIGHT) {
            SAP_TRY(ops->set(ctx, t, 0.0));
            SAP_TRY(sap__krylov_maxpy(s, kk, c.yv, V, t));
            SAP_TRY(sap__krylov_prec(s, t, z2));
            SAP_TRY(ops->axpby(ctx, 1.0, z2, 1.0, s->x));
        } else {
            SAP_TRY(sap__krylov_maxpy(s, kk, c.yv, V, s->x));
        }
        if (kk < k) {
            sap__krylov_breakdown(s, "H(j,j) (singular Hessenberg matrix)", 0.0);
            goto done;
        }
        if (stop) goto done;
        if (happy) {
            sap__krylov_breakdown(s, "h_{j+1,j} (invariant Krylov subspace without the solution)", 0.0);
            goto done;
        }
    }
done:
cleanup:
    return st;
}

/* The same for k columns in lockstep (krylov_many.c).  Per Arnoldi step one block operator
 * (one SpMM and one block preconditioner apply: one pass over the band factors for all
 * columns); the orthogonalisation, the Hessenberg matrix, the rotations and the stop are
 * each column's own (mdot / maxpy on its column views, as the single solve's).  A column that
 * stops inside a cycle (converged, happy breakdown, monitor) keeps its step count and joins
 * the update of x that closes the cycle; on the right that update is one block apply. */
static sap_status gmres_many_common(kry_many *km, int fgmres)
{
    const sap_backend_ops *ops = km->ops;
    sap_context *ctx = km->ctx;
    sap_status st = SAP_OK;
    const int k = km->k, m = km->K->param;
    const sap_int n = km->n;
    const int flex = fgmres && km->P != NULL;
    sap_vec *V = km->W, *Z = fgmres ? km->W + m + 1 : NULL;
    sap_vec *T = &km->W[fgmres ? 2 * m + 1 : m + 1], *Z2 = T + 1;
    const size_t per = gm_col_len(m);
    double *hw = NULL;
    sap_vec *Vc = NULL;
    SAP_TRY(hwork(&km->col[0], per * (size_t)k, &hw));
    SAP_CALLOC(ctx, Vc, (size_t)m + 1);
    const double happy_tol = km->A->prec == SAP_FLOAT ? 1e-6 : 1e-14;
    gm_col c[KRY_MANY_MAX];
    int steps[KRY_MANY_MAX], happy[KRY_MANY_MAX], live[KRY_MANY_MAX], upd[KRY_MANY_MAX], kk[KRY_MANY_MAX];
    double beta[KRY_MANY_MAX], a[KRY_MANY_MAX], b[KRY_MANY_MAX];
    for (int q = 0; q < k; q++) c[q] = gm_col_at(hw + per * (size_t)q, m);
    while (sap__krylov_many_count(km) > 0) {
        SAP_TRY(sap__krylov_many_residual(km, &km->X, &V[0], T, beta));
        int nlive = 0;
        for (int q = 0; q < k; q++) {
            live[q] = upd[q] = happy[q] = steps[q] = 0;
            if (!km->active[q]) continue;
            if (sap__krylov_start(&km->col[q], beta[q])) {
                sap__krylov_many_stop(km, q);
                continue;
            }
            sap_vec v0 = sap__vec_column(&V[0], n, q);
            SAP_TRY(ops->scale(ctx, &v0, 1.0 / beta[q]));
            memset(c[q].g, 0, sizeof(double) * ((size_t)m + 1));
            c[q].g[0] = beta[q];
            live[q] = upd[q] = 1;
            nlive++;
        }
        if (!nlive) break;
        for (int j = 0; j < m && nlive > 0; j++) {
            if (flex) {
                SAP_TRY(sap__krylov_many_prec(km, &V[j], &Z[j]));
                SAP_TRY(sap__krylov_many_spmm(km, &Z[j], &V[j + 1]));
            } else {
                SAP_TRY(sap__krylov_many_op(km, &V[j], &V[j + 1], T));
            }
            for (int q = 0; q < k; q++) {
                if (!live[q]) continue;
                kry_solve *s = &km->col[q];
                for (int i = 0; i <= j + 1; i++) Vc[i] = sap__vec_column(&V[i], n, q);
                const char *bad = NULL;
                double badv = 0.0;
                SAP_TRY(gm_step(s, m, j, Vc, &Vc[j + 1], &c[q], happy_tol, &happy[q], &bad, &badv));
                if (bad) { /* x stays the cycle's start, as the single solve's */
                    sap__krylov_many_scalar(km, q, bad, badv, 0);
                    live[q] = upd[q] = 0;
                    continue;
                }
                steps[q] = j + 1;
                if (sap__krylov_check(s, s->iter + 1.0, fabs(c[q].g[j + 1]))) {
                    sap__krylov_many_stop(km, q);
                    live[q] = 0;
                } else if (happy[q]) {
                    live[q] = 0;
                }
            }
            sap__krylov_many_monitor(km);
            nlive = 0;
            for (int q = 0; q < k; q++) {
                if (!km->active[q]) live[q] = 0;
                nlive += live[q];
            }
        }
        /* x += the cycle's correction, for every column that took part */
        for (int q = 0; q < k; q++) kk[q] = upd[q] ? gm_solve(&c[q], m, steps[q]) : 0;
        if (!flex && km->side == KRY_SIDE_RIGHT) {
            SAP_TRY(ops->set(ctx, T, 0.0));
            for (int q = 0; q < k; q++) {
                if (!kk[q]) continue;
                for (int i = 0; i < kk[q]; i++) Vc[i] = sap__vec_column(&V[i], n, q);
                sap_vec tq = sap__vec_column(T, n, q);
                SAP_TRY(sap__krylov_maxpy(&km->col[q], kk[q], c[q].yv, Vc, &tq));
            }
            SAP_TRY(sap__krylov_many_prec(km, T, Z2));
            for (int q = 0; q < k; q++) {
                a[q] = kk[q] ? 1.0 : 0.0;
                b[q] = 1.0;
            }
            SAP_TRY(ops->caxpby(ctx, k, a, Z2, b, &km->X));
        } else {
            for (int q = 0; q < k; q++) {
                if (!kk[q]) continue;
                for (int i = 0; i < kk[q]; i++) Vc[i] = sap__vec_column(flex ? &Z[i] : &V[i], n, q);
                sap_vec xq = sap__vec_column(&km->X, n, q);
                SAP_TRY(sap__krylov_maxpy(&km->col[q], kk[q], c[q].yv, Vc, &xq));
            }
        }
        for (int q = 0; q < k; q++) {
            if (!upd[q]) continue;
            if (kk[q] < steps[q]) {
                sap__krylov_breakdown(&km->col[q], "H(j,j) (singular Hessenberg matrix)", 0.0);
                sap__krylov_many_stop(km, q);
            } else if (happy[q] && km->active[q]) {
                sap__krylov_breakdown(&km->col[q], "h_{j+1,j} (invariant Krylov subspace without the solution)", 0.0);
                sap__krylov_many_stop(km, q);
            }
        }
    }
cleanup:
    sap__free(ctx, Vc);
    return st;
}

static sap_status gmres_run(kry_solve *s) { return gmres_common(s, 0); }
static sap_status fgmres_run(kry_solve *s) { return gmres_common(s, 1); }
static sap_status gmres_run_many(kry_many *km) { return gmres_many_common(km, 0); }
static sap_status fgmres_run_many(kry_many *km) { return gmres_many_common(km, 1); }
static int gmres_nvec(int m) { return m + 3; }
static int fgmres_nvec(int m) { return 2 * m + 3; }

const sap_krylov_method sap__krylov_gmres_method = {
    .name = "gmres", .help = "restarted GMRES(m) (one iteration per SpMV)", .id = SAP_KRYLOV_GMRES,
    .default_param = 20, .max_param = 1000, .nvec = gmres_nvec, .steps = 1,
    .sides = KRY_SIDES_LEFT | KRY_SIDES_RIGHT, .run = gmres_run, .run_many = gmres_run_many};
const sap_krylov_method sap__krylov_fgmres_method = {
    .name = "fgmres", .help = "flexible GMRES(m), right preconditioning only (a varying M is fine)",
    .id = SAP_KRYLOV_FGMRES, .default_param = 30, .max_param = 1000, .nvec = fgmres_nvec, .steps = 1,
    .sides = KRY_SIDES_RIGHT, .run = fgmres_run, .run_many = fgmres_run_many};
