/* krylov_many.c -- sap_krylov_solve_many: k right-hand sides of one matrix and one
 * preconditioner.  A method with a lockstep form (run_many: CG, BiCGStab, BiCGStab(l), GMRES,
 * FGMRES, CGS, TFQMR, IDR(s), Richardson) runs groups of up to KRY_MANY_MAX columns
 * together: the operator is applied to whole blocks of columns (one SpMM and one block
 * preconditioner apply a step; for the SaP preconditioners one pass over the band factors
 * for all columns), while every column keeps its own scalars, iteration count, best iterate
 * and stop.  Columns whose recursive residual converged while their true residual did not
 * restart together from it (as sap_krylov_solve restarts).  A column whose right-hand side
 * needs the single solve's care (b = 0 or underflowing, NaN/Inf, a zero M^-1 b) goes alone
 * through sap_krylov_solve; so do all columns of the other methods, one after another. */
#include "krylov/krylov_impl.h"

#include <stdio.h>
#include <string.h>

/* the time after the queued device work finished, when the solve times its phases */
static inline sap_status tick(kry_many *km, double *t)
{
    sap_status st = km->K->opt.sync_timing ? km->ops->synchronize(km->ctx) : SAP_OK;
    *t = sap__wtime();
    return st;
}

sap_status sap__krylov_many_spmm(kry_many *km, const sap_vec *X, sap_vec *Y)
{
    double t0, t1;
    sap_status st = tick(km, &t0);
    if (st >= 0) st = km->ops->spmm(km->ctx, km->A, km->k, X, Y);
    sap_status sw = tick(km, &t1);
    km->st->time_spmv += t1 - t0;
    km->st->spmv_count += km->k;
    return st < 0 ? st : (sw < 0 ? sw : st);
}

sap_status sap__krylov_many_prec(kry_many *km, const sap_vec *R, sap_vec *Z)
{
    if (!km->P) return R == Z ? SAP_OK : km->ops->copy(km->ctx, R, Z);
    double t0, t1;
    sap_status st = tick(km, &t0);
    if (st >= 0) st = sap__precond_apply_block(km->P, km->k, R, Z);
    sap_status sw = tick(km, &t1);
    km->st->time_precond += t1 - t0;
    km->st->precond_count += km->k;
    return st < 0 ? st : (sw < 0 ? sw : st);
}

sap_status sap__krylov_many_op(kry_many *km, const sap_vec *IN, sap_vec *OUT, sap_vec *TMP)
{
    sap_status st = SAP_OK;
    switch (km->side) {
    case KRY_SIDE_RIGHT:
        SAP_TRY(sap__krylov_many_prec(km, IN, TMP));
        SAP_TRY(sap__krylov_many_spmm(km, TMP, OUT));
        break;
    case KRY_SIDE_LEFT:
        SAP_TRY(sap__krylov_many_spmm(km, IN, TMP));
        SAP_TRY(sap__krylov_many_prec(km, TMP, OUT));
        break;
    default: SAP_TRY(sap__krylov_many_spmm(km, IN, OUT)); break;
    }
cleanup:
    return st;
}

sap_status sap__krylov_many_op_hat(kry_many *km, const sap_vec *IN, sap_vec *OUT, sap_vec *HAT, sap_vec *TMP,
                                   const sap_vec **dir)
{
    sap_status st = SAP_OK;
    *dir = IN;
    if (km->side == KRY_SIDE_RIGHT) {
        SAP_TRY(sap__krylov_many_prec(km, IN, HAT));
        SAP_TRY(sap__krylov_many_spmm(km, HAT, OUT));
        *dir = HAT;
    } else {
        SAP_TRY(sap__krylov_many_op(km, IN, OUT, TMP));
    }
cleanup:
    return st;
}

sap_status sap__krylov_many_nrm2(kry_many *km, const sap_vec *R, double *nrm)
{
    sap_status st = km->ops->cdot(km->ctx, km->k, 1, R, R, nrm);
    if (st < 0) return st;
    for (int c = 0; c < km->k; c++) nrm[c] = sqrt(nrm[c] > 0 ? nrm[c] : 0.0 * nrm[c]); /* NaN stays NaN */
    return SAP_OK;
}

sap_status sap__krylov_many_axpby(kry_many *km, const double *a, const sap_vec *X, const double *b, sap_vec *Y)
{
    double aa[KRY_MANY_MAX], bb[KRY_MANY_MAX];
    for (int c = 0; c < km->k; c++) {
        aa[c] = km->active[c] ? a[c] : 0.0;
        bb[c] = km->active[c] ? b[c] : 1.0;
    }
    return km->ops->caxpby(km->ctx, km->k, aa, X, bb, Y);
}

sap_status sap__krylov_many_axpbypcz(kry_many *km, const double *a, const sap_vec *X, const double *b, const sap_vec *Y,
                                     const double *c, sap_vec *Z)
{
    double aa[KRY_MANY_MAX], bb[KRY_MANY_MAX], cc[KRY_MANY_MAX];
    for (int q = 0; q < km->k; q++) {
        aa[q] = km->active[q] ? a[q] : 0.0;
        bb[q] = km->active[q] ? b[q] : 0.0;
        cc[q] = km->active[q] ? c[q] : 1.0;
    }
    return km->ops->caxpbypcz(km->ctx, km->k, aa, X, bb, Y, cc, Z);
}

/* R = B - A X for every column; the SpMM timed (the iteration's) or not (the final true
 * residual, as sap_krylov_solve's), counted either way */
static sap_status b_minus_ax(kry_many *km, const sap_vec *X, sap_vec *R, int timed)
{
    double one[KRY_MANY_MAX], mone[KRY_MANY_MAX];
    for (int c = 0; c < km->k; c++) {
        one[c] = 1.0;
        mone[c] = -1.0;
    }
    sap_status st = timed ? sap__krylov_many_spmm(km, X, R) : km->ops->spmm(km->ctx, km->A, km->k, X, R);
    if (st < 0) return st;
    if (!timed) km->st->spmv_count += km->k;
    return km->ops->caxpby(km->ctx, km->k, one, &km->B, mone, R);
}

sap_status sap__krylov_many_residual(kry_many *km, const sap_vec *X, sap_vec *R, sap_vec *TMP, double *nrm)
{
    sap_status st = SAP_OK;
    const int left = km->side == KRY_SIDE_LEFT;
    const int zero = km->x0_zero && X == &km->X; /* X = 0: B - A X = B */
    km->x0_zero = 0;
    if (zero) {
        SAP_TRY(km->ops->copy(km->ctx, &km->B, left ? TMP : R));
        if (!left) {
            for (int c = 0; c < km->k; c++) nrm[c] = km->col[c].bnorm;
            return SAP_OK;
        }
    } else {
        SAP_TRY(b_minus_ax(km, X, left ? TMP : R, 1));
    }
    if (left) SAP_TRY(sap__krylov_many_prec(km, TMP, R));
    SAP_TRY(sap__krylov_many_nrm2(km, R, nrm));
cleanup:
    return st;
}

void sap__krylov_many_check(kry_many *km, const double *base, double step, const double *nrm)
{
    for (int c = 0; c < km->k; c++)
        if (km->active[c] &&
            sap__krylov_check(&km->col[c], (base ? base[c] : km->col[c].iter) + step, nrm[c]))
            sap__krylov_many_stop(km, c);
}

sap_status sap__krylov_many_track_best(kry_many *km)
{
    for (int c = 0; c < km->k; c++) {
        if (!km->active[c]) continue;
        const sap_vec xc = sap__vec_column(&km->X, km->n, c);
        sap_status st = sap__krylov_track_best(&km->col[c], &xc);
        if (st < 0) return st;
    }
    return SAP_OK;
}

sap_status sap__krylov_many_restore_best(kry_many *km)
{
    for (int c = 0; c < km->k; c++) {
        sap_vec xc = sap__vec_column(&km->X, km->n, c);
        sap_status st = sap__krylov_restore_best(&km->col[c], &xc);
        if (st < 0) return st;
    }
    return SAP_OK;
}

int sap__krylov_many_count(const kry_many *km)
{
    int a = 0;
    for (int c = 0; c < km->k; c++) a += km->active[c] != 0;
    return a;
}

void sap__krylov_many_stop(kry_many *km, int c) { km->active[c] = 0; }

int sap__krylov_many_scalar(kry_many *km, int c, const char *what, double v, int nonzero)
{
    if (isfinite(v) && !(nonzero && v == 0.0)) return 0;
    sap__krylov_breakdown(&km->col[c], what, v);
    km->active[c] = 0;
    return 1;
}

int sap__krylov_many_monitor(kry_many *km)
{
    const sap_krylov_options *o = &km->K->opt;
    if (o->monitor && sap__krylov_many_count(km) > 0) {
        double worst = 0, it = 0;
        for (int c = 0; c < km->k; c++) {
            if (!km->active[c]) continue;
            if (!(km->col[c].relres <= worst)) worst = km->col[c].relres;
            if (km->col[c].iter > it) it = km->col[c].iter;
        }
        if (o->monitor(o->monitor_state, it, worst)) {
            for (int c = 0; c < km->k; c++) {
                if (!km->active[c]) continue;
                kry_solve *s = &km->col[c];
                s->reason = KRY_MONITOR;
                snprintf(s->msg, sizeof(s->msg), "%s: stopped by the monitor at iteration %g (relative residual %.3e)",
                         s->method, s->iter, s->relres);
                km->active[c] = 0;
            }
        }
    }
    return sap__krylov_many_count(km) == 0;
}

/* the status order of the columns' results: errors first, then warnings, then OK */
static sap_status worse(sap_status a, sap_status b)
{
    if (a < 0 || b == SAP_OK) return a;
    if (b < 0 || a == SAP_OK) return b;
    return a;
}

/* Column c of B (or X) as a vector: host memory (dev = 0) or the backend's (dev = 1, double). */
static sap_vec arg_col(sap_int n, const double *B, sap_int ldb, int c)
{
    sap_vec v = {n, SAP_DOUBLE, (void *)(uintptr_t)(B + (size_t)c * (size_t)ldb)};
    return v;
}

/* One group of k <= KRY_MANY_MAX columns through the method's run_many.  single[c] = 1:
 * column c is left to sap_krylov_solve.  dev: B and X are in the backend's memory (double),
 * copied into and out of the blocks there. */
static sap_status many_group(sap_krylov *K, sap_matrix *A, sap_precond *P, int k, const double *B, sap_int ldb,
                             double *X, sap_int ldx, sap_krylov_stats *stats, int *single, double *truerel, int dev)
{
    sap_context *ctx = K->ctx;
    const sap_krylov_method *m = K->method;
    const sap_backend_ops *ops = sap__ops(ctx);
    const sap_int n = A->nrows;
    sap_status st = SAP_OK;
    const double t_start = sap__wtime();
    sap_krylov_stats S;
    memset(&S, 0, sizeof(S));
    kry_solve col[KRY_MANY_MAX];
    int active[KRY_MANY_MAX];
    double bn[KRY_MANY_MAX], xn[KRY_MANY_MAX], rn[KRY_MANY_MAX];
    sap_vec *views = NULL;
    const int nw = m->nvec(K->param);
    if (nw < 0) return SAP_ERROR(ctx, SAP_ERR_INVALID, "%s: the method asks for %d work vectors", m->name, nw);
    SAP_TRY(sap__krylov_vectors(K, &K->bvec, n * k, A->sm->prec, nw + 3));
    SAP_CALLOC(ctx, views, (size_t)k * (size_t)(nw + 3));
    kry_many km;
    memset(&km, 0, sizeof(km));
    km.col = col;
    km.k = k;
    km.n = n;
    km.K = K;
    km.ctx = ctx;
    km.ops = ops;
    km.P = sap__precond_is_identity(P) ? NULL : P;
    km.A = A->sm;
    km.B = K->bvec.v[0];
    km.X = K->bvec.v[1];
    km.Xbest = K->bvec.v[2];
    km.W = &K->bvec.v[3];
    km.nw = nw;
    km.active = active;
    km.st = &S;
    km.side = sap__krylov_pick_side(m, km.P != NULL, K->opt.side);
    for (int i = 0; i < nw; i++) SAP_TRY(ops->set(ctx, &km.W[i], 0.0));
    /* zero initial guesses (the usual ones) are set on the backend, not uploaded (dev: the
     * columns are copied there as they are) */
    km.x0_zero = !dev;
    for (int c = 0; c < k && km.x0_zero; c++) km.x0_zero = sap__host_all_zero(ctx, X + (size_t)c * (size_t)ldx, n);
    if (km.x0_zero) SAP_TRY(ops->set(ctx, &km.X, 0.0));
    for (int c = 0; c < k; c++) {
        sap_vec *v = views + (size_t)c * (size_t)(nw + 3);
        for (int i = 0; i < nw + 3; i++) v[i] = sap__vec_column(&K->bvec.v[i], n, c);
        if (dev) {
            const sap_vec bc = arg_col(n, B, ldb, c), xc = arg_col(n, X, ldx, c);
            SAP_TRY(ops->copy(ctx, &bc, &v[0]));
            SAP_TRY(ops->copy(ctx, &xc, &v[1]));
        } else {
            SAP_TRY(ops->vec_upload(ctx, &v[0], B + (size_t)c * (size_t)ldb));
            if (!km.x0_zero) SAP_TRY(ops->vec_upload(ctx, &v[1], X + (size_t)c * (size_t)ldx));
        }
        kry_solve *s = &col[c];
        memset(s, 0, sizeof(*s));
        s->K = K;
        s->ctx = ctx;
        s->ops = ops;
        s->M = A;
        s->A = A->sm;
        s->P = km.P;
        s->side = km.side;
        s->n = n;
        s->b = &v[0];
        s->x = &v[1];
        s->xbest = &v[2];
        s->w = &v[3];
        s->nw = nw;
        s->st = &S;
        s->sync = K->opt.sync_timing;
        s->quiet = 1;
        s->maxit = (double)K->opt.maxit;
        s->tol = K->opt.tol;
        s->best_saved = INFINITY;
        if (m->max_param) snprintf(s->method, sizeof(s->method), "%s(%d)", m->name, K->param);
        else snprintf(s->method, sizeof(s->method), "%s", m->name);
    }
    SAP_TRY(sap__krylov_many_nrm2(&km, &km.B, bn));
    if (km.x0_zero) memset(xn, 0, sizeof(xn));
    else SAP_TRY(sap__krylov_many_nrm2(&km, &km.X, xn));
    for (int c = 0; c < k; c++) {
        /* b = 0 (or underflowing), NaN/Inf: the single solve's scaling and messages */
        single[c] = !(bn[c] > 0.0) || !isfinite(bn[c]) || !isfinite(xn[c]);
        col[c].bnorm = col[c].refnorm = bn[c];
    }
    if (km.side == KRY_SIDE_LEFT) {
        SAP_TRY(sap__krylov_many_prec(&km, &km.B, &km.Xbest));
        SAP_TRY(sap__krylov_many_nrm2(&km, &km.Xbest, rn));
        for (int c = 0; c < k; c++) {
            col[c].refnorm = rn[c];
            if (!(rn[c] > 0.0) || !isfinite(rn[c])) single[c] = 1; /* its error comes from there */
        }
    }
    S.time_setup = sap__wtime() - t_start;
    for (int c = 0; c < k; c++) active[c] = !single[c];
    int restarts[KRY_MANY_MAX] = {0};
    for (;;) {
        if (sap__krylov_many_count(&km) > 0) SAP_TRY(m->run_many(&km));
        km.x0_zero = 0;
        for (int c = 0; c < k; c++)
            if (col[c].reason == KRY_ERROR) {
                st = col[c].err;
                goto cleanup;
            }
        /* the true residuals, in the scratch block Xbest */
        SAP_TRY(b_minus_ax(&km, &km.X, &km.Xbest, 0));
        SAP_TRY(sap__krylov_many_nrm2(&km, &km.Xbest, rn));
        /* converged in the recursion only (e.g. x = x0 + M^-1 y with float factors): the
         * columns restart together from the true residual with a tighter internal
         * tolerance, as sap_krylov_solve does */
        int again = 0;
        for (int c = 0; c < k; c++) {
            if (single[c]) continue;
            kry_solve *s = &col[c];
            truerel[c] = rn[c] / bn[c];
            if (s->reason != KRY_CONVERGED || truerel[c] <= K->opt.tol) continue;
            if (!(s->iter < s->maxit) || restarts[c] >= KRY_MAX_RESTARTS || !isfinite(truerel[c])) {
                s->reason = KRY_MAXIT;
                snprintf(s->msg, sizeof(s->msg),
                         "%s: the recursive residual %.3e reached the tolerance but the true residual is %.3e > %.3e "
                         "(after %d restart%s)",
                         s->method, s->relres, truerel[c], K->opt.tol, restarts[c], restarts[c] == 1 ? "" : "s");
                continue;
            }
            restarts[c]++;
            const double f = K->opt.tol / truerel[c];
            s->tol *= f < 1e-3 ? 1e-3 : (f > 0.5 ? 0.5 : f);
            s->reason = KRY_RUNNING;
            s->best_saved = INFINITY;
            s->msg[0] = '\0';
            active[c] = again = 1;
        }
        if (!again) break;
    }
    SAP_TRY(sap__krylov_weigh(K, k, n, &km.B, &km.Xbest, 0)); /* Xbest: B - A X */
    /* the columns checked by their norms on the backend, as sap_krylov_solve's x: the host
     * looks for the NaN / Inf only in a column whose norm is not finite */
    SAP_TRY(sap__krylov_many_nrm2(&km, &km.X, xn));
    for (int c = 0; c < k; c++) {
        if (single[c]) continue;
        kry_solve *s = &col[c];
        if (dev) { /* (no host copy to name the entry) */
            sap_vec xc = arg_col(n, X, ldx, c);
            SAP_TRY(ops->copy(ctx, s->x, &xc));
            if (!isfinite(xn[c]) && s->reason != KRY_NONFINITE) {
                s->reason = KRY_NONFINITE;
                snprintf(s->msg, sizeof(s->msg), "%s: the iterate x became NaN or Inf at iteration %g", s->method,
                         s->iter);
            }
            continue;
        }
        SAP_TRY(ops->vec_download(ctx, s->x, X + (size_t)c * (size_t)ldx));
        const double *xc = X + (size_t)c * (size_t)ldx;
        for (sap_int i = 0; !isfinite(xn[c]) && i < n; i++)
            if (!isfinite(xc[i]) && s->reason != KRY_NONFINITE) {
                s->reason = KRY_NONFINITE;
                snprintf(s->msg, sizeof(s->msg), "%s: the iterate x became NaN or Inf (x[%lld] = %g) at iteration %g",
                         s->method, (long long)i, xc[i], s->iter);
                break;
            }
    }
    const double total = sap__wtime() - t_start;
    for (int c = 0; c < k; c++) {
        if (single[c]) continue;
        const kry_solve *s = &col[c];
        sap_krylov_stats *o = stats + c;
        *o = S;
        o->iterations = s->iter;
        o->relative_residual = s->relres;
        o->true_residual = truerel[c];
        o->time_total = total;
        o->time_vector = total - S.time_setup - S.time_spmv - S.time_precond;
        if (o->time_vector < 0.0) o->time_vector = 0.0;
        o->status = sap__krylov_reason_status(s->reason);
        if (o->status != SAP_OK)
            o->status = SAP_ERROR(ctx, o->status,
                                  "%s (right-hand side %d of the batch); x returned: the best iterate, true residual "
                                  "||b - A x|| / ||b|| = %.3e",
                                  s->msg[0] ? s->msg : sap_status_string(o->status), c, truerel[c]);
    }
cleanup:
    sap__free(ctx, views);
    return st;
}

static sap_status solve_many(sap_krylov *K, sap_matrix *A, sap_precond *P, sap_int k, const double *B, sap_int ldb,
                             double *X, sap_int ldx, sap_krylov_stats *stats, int dev)
{
    if (!K) return SAP_ERR_INVALID;
    sap_context *ctx = K->ctx;
    if (!A || !A->sm) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_solve_many: matrix is NULL");
    const sap_int n = A->nrows;
    if (k < 0 || ldb < n || ldx < n || (k > 0 && n > 0 && (!B || !X)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_solve_many: k = %lld, ldb = %lld, ldx = %lld, n = %lld%s",
                         (long long)k, (long long)ldb, (long long)ldx, (long long)n,
                         (!B || !X) ? ", NULL array" : "");
    sap_status worst = SAP_OK, st = SAP_OK;
    const sap_krylov_method *m = K->method;
    /* the lockstep form: more than one column, a method that has it, a backend with the
     * column kernels, a square matrix of this context whose preconditioner is ready (else
     * the single solve reports the error) */
    const int lockstep = k > 1 && m->run_many && n > 0 && A->ctx == ctx && A->nrows == A->ncols &&
                         sap__ops(ctx)->spmm && (!P || (P->ctx == ctx && sap__precond_check_ready(P, n) >= 0));
    double *wr = NULL; /* the columns' weighted residuals, into K->wres at the end */
    if (K->has_w && k > 0) {
        SAP_ALLOC(ctx, wr, k);
        for (sap_int c = 0; c < k; c++) wr[c] = NAN;
    }
    int gmax = KRY_MANY_MAX; /* halved while a group's blocks do not fit the memory */
    for (sap_int c0 = 0; c0 < k;) {
        const int g = (int)(k - c0 < gmax ? k - c0 : gmax);
        int single[KRY_MANY_MAX];
        double truerel[KRY_MANY_MAX];
        sap_krylov_stats gs[KRY_MANY_MAX];
        memset(gs, 0, sizeof(gs));
        for (int c = 0; c < g; c++) single[c] = 1;
        if (lockstep && g > 1) {
            SAP_TRY(sap__krylov_wres_room(K, g));
            sap__try_begin(ctx);
            sap_status sg = many_group(K, A, P, g, B + c0 * ldb, ldb, X + c0 * ldx, ldx, gs, single, truerel, dev);
            sap__try_end(ctx);
            if (sg == SAP_ERR_OUT_OF_MEMORY) {
                /* the blocks of g columns (the Krylov vectors, the preconditioner's work) did
                 * not fit: fewer columns at once, the last resort one after another (the host
                 * X is written only at a group's end) */
                sap__krylov_cache_free(K, &K->bvec);
                sap_context_clear_error(ctx);
                gmax = g / 2;
                continue;
            }
            SAP_TRY(sg);
            for (int c = 0; c < g && wr; c++)
                if (!single[c]) wr[c0 + c] = K->wres[c];
        }
        for (int c = 0; c < g; c++) {
            if (single[c]) {
                sap_krylov_stats one;
                sap_status sc;
                if (dev) {
                    const sap_vec bc = arg_col(n, B, ldb, (int)(c0 + c));
                    sap_vec xc = arg_col(n, X, ldx, (int)(c0 + c));
                    sc = sap__krylov_solve_vec(K, A, P, &bc, &xc, &one);
                } else {
                    sc = sap_krylov_solve(K, A, P, B + (c0 + c) * ldb, X + (c0 + c) * ldx, &one);
                }
                gs[c] = one;
                if (wr) wr[c0 + c] = sap__krylov_weighted_residual(K, 0);
                if (sc < 0 && sc != SAP_ERR_BREAKDOWN && sc != SAP_ERR_NONFINITE && sc != SAP_ERR_SINGULAR) {
                    if (stats) stats[c0 + c] = one;
                    st = sc;
                    goto cleanup;
                }
            }
            if (stats) stats[c0 + c] = gs[c];
            worst = worse(worst, gs[c].status);
        }
        c0 += g;
    }
    if (wr) {
        SAP_TRY(sap__krylov_wres_room(K, k));
        memcpy(K->wres, wr, sizeof(double) * (size_t)k);
    }
    st = worst;
cleanup:
    sap__free(ctx, wr);
    return st;
}

sap_status sap_krylov_solve_many(sap_krylov *K, sap_matrix *A, sap_precond *P, sap_int k, const double *B,
                                 sap_int ldb, double *X, sap_int ldx, sap_krylov_stats *stats)
{
    return solve_many(K, A, P, k, B, ldb, X, ldx, stats, 0);
}

sap_status sap__krylov_solve_many_vec(sap_krylov *K, sap_matrix *A, sap_precond *P, sap_int k, const double *dB,
                                      sap_int ldb, double *dX, sap_int ldx, sap_krylov_stats *stats)
{
    return solve_many(K, A, P, k, dB, ldb, dX, ldx, stats, 1);
}
