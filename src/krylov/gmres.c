/* gmres.c -- restarted GMRES(m) (Saad and Schultz 1986; m = 20 by default) with left,
 * right or no preconditioning, and flexible FGMRES(m) (Saad 1993; m = 30; right only:
 * it keeps z_j = M^-1 v_j, so the preconditioner may change between applications).
 *
 * Arnoldi with classical Gram-Schmidt and selective reorthogonalisation (DGKS): one mdot
 * gives h = V^T w together with w.w, w -= V h by maxpy, and a second pass is made when
 * the projection removed more than half of ||w||^2 (||w'|| < ||w|| / sqrt 2).  Givens
 * rotations on the host give the residual estimate |g_{j+1}| after every step (one
 * iteration = one Arnoldi step = one SpMV); the iterate is formed at the end of a cycle
 * or at an exit.  Right preconditioning and FGMRES monitor the true residual norm, left
 * ||M^-1 r|| / ||M^-1 b||.  h_{j+1,j} = 0 ("happy" breakdown) ends the cycle: the
 * estimate is then exact; a singular Hessenberg matrix is SAP_WARN_BREAKDOWN. */
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

static sap_status gmres_common(kry_solve *s, int fgmres)
{
    const sap_backend_ops *ops = s->ops;
    sap_context *ctx = s->ctx;
    sap_status st = SAP_OK;
    const int m = s->K->param;
    const int flex = fgmres && s->P != NULL;
    sap_vec *V = s->w, *Z = fgmres ? s->w + m + 1 : NULL;
    sap_vec *t = &s->w[fgmres ? 2 * m + 1 : m + 1], *z2 = t + 1;
    const size_t ld = (size_t)m + 1;
    double *H = NULL;
    SAP_TRY(hwork(s, ld * (size_t)m + 6 * (size_t)m + 8, &H));
    double *cs = H + ld * (size_t)m, *sn = cs + m, *g = sn + m, *yv = g + m + 1, *h = yv + m, *h2 = h + m + 2;
    const double happy_tol = s->A->prec == SAP_FLOAT ? 1e-6 : 1e-14;

    for (;;) {
        double beta = 0.0;
        SAP_TRY(sap__krylov_residual(s, s->x, &V[0], t, &beta));
        if (sap__krylov_start(s, beta)) goto done;
        SAP_TRY(ops->scale(ctx, &V[0], 1.0 / beta));
        memset(g, 0, sizeof(double) * ld);
        g[0] = beta;
        int k = 0, happy = 0, stop = 0;
        for (int j = 0; j < m; j++) {
            sap_vec *w = &V[j + 1];
            if (flex) {
                SAP_TRY(sap__krylov_prec(s, &V[j], &Z[j]));
                SAP_TRY(sap__krylov_spmv(s, &Z[j], w));
            } else {
                SAP_TRY(sap__krylov_op(s, &V[j], w, t));
            }
            /* classical Gram-Schmidt, h[j+1] = w.w from the same pass */
            SAP_TRY(sap__krylov_mdot(s, j + 2, V, w, h));
            const double ww = h[j + 1];
            KRY_SCALAR(s, "||op(v_j)||^2", ww, 0);
            double proj = 0.0;
            for (int i = 0; i <= j; i++) {
                yv[i] = -h[i];
                proj += h[i] * h[i];
            }
            SAP_TRY(sap__krylov_maxpy(s, j + 1, yv, V, w));
            if (ww - proj < 0.5 * ww) {
                /* the projection cancelled much of w: orthogonalise once more */
                SAP_TRY(sap__krylov_mdot(s, j + 1, V, w, h2));
                for (int i = 0; i <= j; i++) {
                    yv[i] = -h2[i];
                    h[i] += h2[i];
                }
                SAP_TRY(sap__krylov_maxpy(s, j + 1, yv, V, w));
            }
            double hn = 0.0;
            SAP_TRY(ops->nrm2(ctx, w, &hn));
            KRY_SCALAR(s, "h_{j+1,j}", hn, 0);
            double *Hj = H + (size_t)j * ld;
            for (int i = 0; i <= j; i++) Hj[i] = h[i];
            if (hn <= happy_tol * sqrt(ww)) {
                happy = 1;
                hn = 0.0;
            } else {
                SAP_TRY(ops->scale(ctx, w, 1.0 / hn));
            }
            Hj[j + 1] = hn;
            for (int i = 0; i < j; i++) {
                const double a = cs[i] * Hj[i] + sn[i] * Hj[i + 1];
                Hj[i + 1] = -sn[i] * Hj[i] + cs[i] * Hj[i + 1];
                Hj[i] = a;
            }
            const double a = Hj[j], b = Hj[j + 1];
            double c = 1.0, sgn = 0.0;
            if (b != 0.0) {
                if (fabs(b) > fabs(a)) {
                    const double tt = a / b;
                    sgn = 1.0 / sqrt(1.0 + tt * tt);
                    c = sgn * tt;
                } else {
                    const double tt = b / a;
                    c = 1.0 / sqrt(1.0 + tt * tt);
                    sgn = c * tt;
                }
            }
            cs[j] = c;
            sn[j] = sgn;
            Hj[j] = c * a + sgn * b;
            Hj[j + 1] = 0.0;
            g[j + 1] = -sgn * g[j];
            g[j] = c * g[j];
            k = j + 1;
            stop = sap__krylov_check(s, s->iter + 1.0, fabs(g[j + 1]));
            if (stop || happy) break;
        }
        /* y = H(0:k, 0:k)^-1 g, on the leading nonsingular part */
        int kk = k;
        for (int i = 0; i < k; i++)
            if (H[(size_t)i * ld + i] == 0.0) {
                kk = i;
                break;
            }
        for (int i = kk - 1; i >= 0; i--) {
            double v = g[i];
            for (int q = i + 1; q < kk; q++) v -= H[(size_t)q * ld + i] * yv[q];
            yv[i] = v / H[(size_t)i * ld + i];
        }
        if (flex) {
            SAP_TRY(sap__krylov_maxpy(s, kk, yv, Z, s->x));
        } else if (s->side == KRY_SIDE_RIGHT) {
            SAP_TRY(ops->set(ctx, t, 0.0));
            SAP_TRY(sap__krylov_maxpy(s, kk, yv, V, t));
            SAP_TRY(sap__krylov_prec(s, t, z2));
            SAP_TRY(ops->axpby(ctx, 1.0, z2, 1.0, s->x));
        } else {
            SAP_TRY(sap__krylov_maxpy(s, kk, yv, V, s->x));
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

static sap_status gmres_run(kry_solve *s) { return gmres_common(s, 0); }
static sap_status fgmres_run(kry_solve *s) { return gmres_common(s, 1); }
static int gmres_nvec(int m) { return m + 3; }
static int fgmres_nvec(int m) { return 2 * m + 3; }

const sap_krylov_method sap__krylov_gmres_method = {
    .name = "gmres", .help = "restarted GMRES(m) (one iteration per SpMV)", .id = SAP_KRYLOV_GMRES,
    .default_param = 20, .max_param = 1000, .nvec = gmres_nvec, .steps = 1,
    .sides = KRY_SIDES_LEFT | KRY_SIDES_RIGHT, .run = gmres_run};
const sap_krylov_method sap__krylov_fgmres_method = {
    .name = "fgmres", .help = "flexible GMRES(m), right preconditioning only (a varying M is fine)",
    .id = SAP_KRYLOV_FGMRES, .default_param = 30, .max_param = 1000, .nvec = fgmres_nvec, .steps = 1,
    .sides = KRY_SIDES_RIGHT, .run = fgmres_run};
