/* krylov.c -- the Krylov solver front end: options, method names, the vectors cached in
 * the sap_krylov object (the methods come from registry.c), the helpers the drivers share (timed SpMV and preconditioner,
 * convergence/stagnation/monitor checks, best-iterate tracking) and sap_krylov_solve,
 * which runs a driver and checks the true residual at the end.
 *
 * Stopping (every case has its own status; x is always the best iterate seen):
 *  - the monitored residual ||r|| / ||b|| (left preconditioning: ||M^-1 r|| / ||M^-1 b||)
 *    reaches tol: the true residual ||b - A x|| / ||b|| is recomputed; above tol the
 *    driver restarts from the true residual with a tighter internal tolerance, at most
 *    KRY_MAX_RESTARTS times and while iterations remain, else SAP_WARN_NOT_CONVERGED;
 *  - maxit iterations: SAP_WARN_NOT_CONVERGED;
 *  - a monitor callback returning non-zero: SAP_WARN_INTERRUPTED (the caller's decision);
 *  - no relative decrease of 1e-3 of the best residual within stagnation_window
 *    iterations: SAP_WARN_STAGNATED;
 *  - a scalar of the recurrence is zero (rho, omega, ...): SAP_WARN_BREAKDOWN;
 *  - a scalar or the residual is NaN/Inf: SAP_ERR_BREAKDOWN.
 * b = 0 gives x = 0 at once.  The message of every warning or error names the method,
 * the iteration and the quantity (sap_context_last_error). */
#include "krylov/krylov_impl.h"

#include <stdio.h>
#include <string.h>

#define KRY_HIST_INITIAL 65536

/* ---- names ------------------------------------------------------------------------------------ */

const char *sap_krylov_name(sap_krylov_type type)
{
    const sap_krylov_method *m = sap__krylov_find_id((int)type);
    return m ? m->name : "unknown";
}

sap_status sap_krylov_parse(const char *spec, sap_krylov_type *type, int *param)
{
    if (!spec || !type) return SAP_ERR_INVALID;
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    int id = 0;
    const sap_krylov_method *m = sap__krylov_find_name(spec, len, &id);
    if (!m) return SAP_ERR_INVALID;
    int p = 0;
    if (colon && m->param_is_method) {
        int inner = 0;
        const sap_krylov_method *im = sap__krylov_find_name(colon + 1, strlen(colon + 1), &inner);
        if (!im || im->param_is_method || inner + 1 > m->max_param) return SAP_ERR_INVALID;
        p = inner + 1;
    } else if (colon) {
        const char *q = colon + 1;
        if (!*q || m->max_param == 0) return SAP_ERR_INVALID;
        long v = 0;
        for (; *q; q++) {
            if (*q < '0' || *q > '9') return SAP_ERR_INVALID;
            v = v * 10 + (*q - '0');
            if (v > m->max_param) return SAP_ERR_INVALID;
        }
        if (v < 1) return SAP_ERR_INVALID;
        p = (int)v;
    }
    *type = (sap_krylov_type)id;
    if (param) *param = p;
    return SAP_OK;
}

void sap_krylov_options_init(sap_krylov_options *opt)
{
    if (!opt) return;
    memset(opt, 0, sizeof(*opt));
    opt->type = SAP_KRYLOV_BICGSTABL;
    opt->param = 0;
    opt->side = SAP_PRECOND_RIGHT;
    opt->tol = 1e-10;
    opt->maxit = 1000;
    opt->stagnation_window = 0;
    opt->history = 1;
    opt->sync_timing = 1;
}

/* ---- object ------------------------------------------------------------------------------- */

sap_status sap_krylov_create(sap_context *ctx, const sap_krylov_options *opt, sap_krylov **out)
{
    SAP_CHECK_CTX(ctx);
    if (!out) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_create: output pointer is NULL");
    *out = NULL;
    sap_krylov_options o;
    if (opt) o = *opt;
    else sap_krylov_options_init(&o);
    const sap_krylov_method *m = sap__krylov_find_id((int)o.type);
    if (!m) return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_create: unknown Krylov method %d", (int)o.type);
    if (o.param < 0 || o.param > m->max_param || (m->max_param == 0 && o.param != 0))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_create: parameter %d out of range for %s (1..%d)", o.param,
                         m->name, m->max_param);
    if (m->param_is_method && o.param > 0) {
        const sap_krylov_method *im = sap__krylov_find_id(o.param - 1);
        if (!im || im->param_is_method)
            return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_create: %s: parameter %d names no inner Krylov method",
                             m->name, o.param);
    }
    if (!(o.tol >= 0.0) || !isfinite(o.tol))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_create: tolerance %g must be finite and >= 0", o.tol);
    if (o.maxit < 0 || o.stagnation_window < 0)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_create: maxit and stagnation_window must be >= 0");
    if (o.side != SAP_PRECOND_LEFT && o.side != SAP_PRECOND_RIGHT)
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_create: unknown preconditioning side %d", (int)o.side);
    sap_status st = SAP_OK;
    sap_krylov *K = NULL;
    SAP_CALLOC(ctx, K, 1);
    K->ctx = ctx;
    K->opt = o;
    K->method = m;
    K->param = o.param ? o.param : m->default_param;
    *out = K;
cleanup:
    return st;
}

void sap__krylov_cache_free(sap_krylov *K, kry_cache *c)
{
    const sap_backend_ops *ops = sap__ops(K->ctx);
    for (int i = 0; i < c->count; i++)
        if (c->v[i].data) ops->vec_destroy(K->ctx, &c->v[i]);
    sap__free(K->ctx, c->v);
    c->v = NULL;
    c->count = 0;
}

static void free_vectors(sap_krylov *K)
{
    const sap_backend_ops *ops = sap__ops(K->ctx);
    sap__krylov_cache_free(K, &K->vec);
    sap__krylov_cache_free(K, &K->bvec);
    for (int i = 0; i < K->nshadow; i++)
        if (K->shadow[i].data) ops->vec_destroy(K->ctx, &K->shadow[i]);
    sap__free(K->ctx, K->shadow);
    K->shadow = NULL;
    K->nshadow = 0;
}

void sap_krylov_destroy(sap_krylov *K)
{
    if (!K) return;
    sap_krylov_destroy(K->inner);
    free_vectors(K);
    sap__free(K->ctx, K->hist);
    sap__free(K->ctx, K->hwork);
    sap__free(K->ctx, K->wres);
    if (K->wv.data) sap__ops(K->ctx)->vec_destroy(K->ctx, &K->wv);
    sap__free(K->ctx, K);
}

sap_status sap__krylov_set_weights(sap_krylov *K, const double *w, sap_int n)
{
    if (!K) return SAP_ERR_INVALID;
    sap_context *ctx = K->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    sap_status st = SAP_OK;
    K->has_w = 0;
    if (!w) return SAP_OK;
    if (K->wv.data && K->wv.n != n) {
        ops->vec_destroy(ctx, &K->wv);
        memset(&K->wv, 0, sizeof(K->wv));
    }
    if (!K->wv.data) SAP_TRY(ops->vec_create(ctx, n, SAP_DOUBLE, &K->wv));
    SAP_TRY(ops->vec_upload(ctx, &K->wv, w));
    K->has_w = 1;
cleanup:
    return st;
}

double sap__krylov_weighted_residual(const sap_krylov *K, sap_int c)
{
    return K && K->has_w && K->wres && c >= 0 && c < K->wres_cap ? K->wres[c] : NAN;
}

sap_status sap__krylov_wres_room(sap_krylov *K, sap_int k)
{
    if (k > K->wres_cap) {
        double *w = sap__realloc(K->ctx, K->wres, (size_t)k, sizeof(double), __FILE__, __LINE__);
        if (!w) return SAP_ERR_OUT_OF_MEMORY;
        K->wres = w;
        K->wres_cap = k;
    }
    for (sap_int c = 0; c < K->wres_cap; c++) K->wres[c] = NAN;
    return SAP_OK;
}

sap_status sap__krylov_weigh(sap_krylov *K, sap_int k, sap_int n, const sap_vec *B, sap_vec *R, sap_int c0)
{
    sap_context *ctx = K->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    if (!K->has_w || K->wv.n != n || R->prec != SAP_DOUBLE || B->prec != SAP_DOUBLE) return SAP_OK;
    if (c0 + k > K->wres_cap) return SAP_ERR_INVALID;
    for (sap_int c = 0; c < k; c++) {
        sap_vec rc = sap__vec_column(R, n, c);
        const sap_vec bc = sap__vec_column(B, n, c);
        double rn = 0, bn = 0;
        sap_status st = ops->pointwise_mult(ctx, &K->wv, &rc, &rc);
        if (st >= 0) st = ops->nrm2(ctx, &rc, &rn);
        if (st >= 0) st = ops->pointwise_mult(ctx, &K->wv, &bc, &rc); /* R is scratch now */
        if (st >= 0) st = ops->nrm2(ctx, &rc, &bn);
        if (st < 0) return st;
        K->wres[c0 + c] = bn > 0 ? rn / bn : NAN;
    }
    return SAP_OK;
}

sap_status sap__krylov_vectors(sap_krylov *K, kry_cache *c, sap_int n, sap_precision prec, int count)
{
    if (c->v && c->n == n && c->prec == prec && c->count >= count) return SAP_OK;
    sap_context *ctx = K->ctx;
    const sap_backend_ops *ops = sap__ops(ctx);
    sap__krylov_cache_free(K, c);
    sap_status st = SAP_OK;
    SAP_CALLOC(ctx, c->v, count);
    c->count = count;
    c->n = n;
    c->prec = prec;
    for (int i = 0; i < count; i++) SAP_TRY(ops->vec_create(ctx, n, prec, &c->v[i]));
    return SAP_OK;
cleanup:
    sap__krylov_cache_free(K, c);
    return st;
}

/* ---- helpers -------------------------------------------------------------------------------- */

/* The time after the queued device work finished (when the solve times its phases);
 * a device error found while waiting is returned. */
static inline sap_status tick(kry_solve *s, double *t)
{
    sap_status st = s->sync ? s->ops->synchronize(s->ctx) : SAP_OK;
    *t = sap__wtime();
    return st;
}

/* y = A x with A the given backend matrix (A or A^T), timed and counted */
static sap_status timed_spmv(kry_solve *s, const sap_spmat *A, const sap_vec *x, sap_vec *y)
{
    double t0, t1;
    sap_status st = tick(s, &t0);
    if (st >= 0) st = s->ops->spmv(s->ctx, A, 1.0, x, 0.0, y);
    sap_status sw = tick(s, &t1);
    s->st->time_spmv += t1 - t0;
    s->st->spmv_count++;
    return st < 0 ? st : (sw < 0 ? sw : st);
}

/* z = P^-1 r (P: M or the M^T of the dual recursions), timed and counted; a copy without P */
static sap_status timed_prec(kry_solve *s, sap_precond *P, const sap_vec *r, sap_vec *z)
{
    if (!P) return r == z ? SAP_OK : s->ops->copy(s->ctx, r, z);
    double t0, t1;
    sap_status st = tick(s, &t0);
    if (st >= 0) st = sap__precond_apply_vec(P, r, z);
    sap_status sw = tick(s, &t1);
    s->st->time_precond += t1 - t0;
    s->st->precond_count++;
    return st < 0 ? st : (sw < 0 ? sw : st);
}

sap_status sap__krylov_spmv(kry_solve *s, const sap_vec *x, sap_vec *y) { return timed_spmv(s, s->A, x, y); }

sap_status sap__krylov_prec(kry_solve *s, const sap_vec *r, sap_vec *z) { return timed_prec(s, s->P, r, z); }

sap_status sap__krylov_op(kry_solve *s, const sap_vec *in, sap_vec *out, sap_vec *tmp)
{
    sap_status st = SAP_OK;
    switch (s->side) {
    case KRY_SIDE_RIGHT:
        SAP_TRY(sap__krylov_prec(s, in, tmp));
        SAP_TRY(sap__krylov_spmv(s, tmp, out));
        break;
    case KRY_SIDE_LEFT:
        SAP_TRY(sap__krylov_spmv(s, in, tmp));
        SAP_TRY(sap__krylov_prec(s, tmp, out));
        break;
    default: SAP_TRY(sap__krylov_spmv(s, in, out)); break;
    }
cleanup:
    return st;
}

sap_status sap__krylov_op_hat(kry_solve *s, const sap_vec *in, sap_vec *out, sap_vec *hat, sap_vec *tmp,
                              const sap_vec **xdir)
{
    sap_status st = SAP_OK;
    *xdir = in;
    if (s->side == KRY_SIDE_RIGHT) {
        SAP_TRY(sap__krylov_prec(s, in, hat));
        SAP_TRY(sap__krylov_spmv(s, hat, out));
        *xdir = hat;
    } else {
        SAP_TRY(sap__krylov_op(s, in, out, tmp));
    }
cleanup:
    return st;
}

sap_status sap__krylov_spmv_t(kry_solve *s, const sap_vec *x, sap_vec *y)
{
    const sap_spmat *AT = NULL;
    sap_status st = sap__matrix_derived(s->M, 1, s->A->prec, SAP_FORMAT_AUTO, &AT);
    return st < 0 ? st : timed_spmv(s, AT, x, y);
}

sap_status sap__krylov_prec_t(kry_solve *s, const sap_vec *r, sap_vec *z) { return timed_prec(s, s->PT, r, z); }

/* s->PT: P's type with P's options and precision, set up on A^T */
static sap_status transposed_precond(kry_solve *s)
{
    sap_context *ctx = s->ctx;
    const sap_precond *P = s->P;
    sap_status st = SAP_OK;
    sap_csr *AT = NULL;
    sap_precond *PT = NULL;
    SAP_TRY(sap_precond_create(ctx, sap_precond_name(P), &PT));
    for (int i = 0; i < P->type->nopts; i++) {
        char buf[512];
        const char *name = P->type->opts[i].name;
        if (sap_precond_get_option(P, name, buf, sizeof(buf)) == SAP_OK) SAP_TRY(sap_precond_set_option(PT, name, buf));
    }
    SAP_TRY(sap_precond_set_precision(PT, P->prec));
    SAP_TRY(sap__matrix_host_csr(s->M, 1, &AT));
    SAP_TRY(sap_precond_setup_symbolic(PT, AT));
    SAP_TRY(sap_precond_setup_numeric(PT, AT));
    s->PT = PT;
    PT = NULL;
cleanup:
    if (st < 0 && st != SAP_ERR_OUT_OF_MEMORY) {
        char why[300];
        snprintf(why, sizeof(why), "%s", sap_context_last_error(ctx));
        st = SAP_ERROR(ctx, st, "%s: setting up the transposed preconditioner (%s on A^T) failed: %s", s->method,
                       sap_precond_name(P), why);
    }
    sap_precond_destroy(PT);
    sap_csr_destroy(AT);
    return st;
}

sap_status sap__krylov_residual(kry_solve *s, const sap_vec *x, sap_vec *r, sap_vec *tmp, double *nrm)
{
    sap_status st = SAP_OK;
    sap_vec *t = s->side == KRY_SIDE_LEFT ? tmp : r;
    const int zero = s->x0_zero && x == s->x; /* x = 0: b - A x = b */
    s->x0_zero = 0;
    if (zero) {
        SAP_TRY(s->ops->copy(s->ctx, s->b, t));
        *nrm = s->bnorm;
    } else {
        SAP_TRY(sap__krylov_spmv(s, x, t));
        SAP_TRY(s->ops->axpby_nrm2(s->ctx, 1.0, s->b, -1.0, t, nrm));
    }
    if (s->side == KRY_SIDE_LEFT) {
        SAP_TRY(sap__krylov_prec(s, t, r));
        SAP_TRY(s->ops->nrm2(s->ctx, r, nrm));
    }
cleanup:
    return st;
}

sap_status sap__krylov_mdot(kry_solve *s, int k, const sap_vec *x, const sap_vec *y, double *r)
{
    for (int i = 0; i < k; i += 64) {
        sap_status st = s->ops->mdot(s->ctx, k - i < 64 ? k - i : 64, x + i, y, r + i);
        if (st < 0) return st;
    }
    return SAP_OK;
}

sap_status sap__krylov_maxpy(kry_solve *s, int k, const double *a, const sap_vec *x, sap_vec *y)
{
    for (int i = 0; i < k; i += 64) {
        sap_status st = s->ops->maxpy(s->ctx, k - i < 64 ? k - i : 64, a + i, x + i, y);
        if (st < 0) return st;
    }
    return SAP_OK;
}

static int record(kry_solve *s, double relres)
{
    sap_krylov *K = s->K;
    if (!K->opt.history || s->quiet) return 0;
    if (K->hist_len == K->hist_cap) {
        sap_int cap = K->hist_cap ? 2 * K->hist_cap : 64;
        double *h = sap__realloc(s->ctx, K->hist, (size_t)cap, sizeof(double), __FILE__, __LINE__);
        if (!h) {
            s->err = SAP_ERR_OUT_OF_MEMORY;
            s->reason = KRY_ERROR;
            return 1;
        }
        K->hist = h;
        K->hist_cap = cap;
    }
    K->hist[K->hist_len++] = relres;
    return 0;
}

static void fmt_iter(char *buf, size_t len, double it)
{
    if (it == floor(it)) snprintf(buf, len, "%.0f", it);
    else snprintf(buf, len, "%.2f", it);
}

int sap__krylov_start(kry_solve *s, double nrm)
{
    s->relres = nrm / s->refnorm;
    if (!s->started) {
        s->started = 1;
        s->stag_best = s->relres;
        s->stag_iter = s->iter;
        if (record(s, s->relres)) return 1;
    }
    if (!isfinite(s->relres)) {
        s->reason = KRY_NONFINITE;
        snprintf(s->msg, sizeof(s->msg), "%s: the initial residual norm is %g (NaN or Inf in A, b or x0)", s->method,
                 nrm);
        return 1;
    }
    if (s->relres <= s->tol) {
        s->reason = KRY_CONVERGED;
        return 1;
    }
    if (s->iter >= s->maxit) {
        char it[32];
        fmt_iter(it, sizeof(it), s->iter);
        s->reason = KRY_MAXIT;
        snprintf(s->msg, sizeof(s->msg), "%s: %s iterations done, last iterate's relative residual %.3e > tol %.3e", s->method, it,
                 s->relres, s->K->opt.tol);
        return 1;
    }
    return 0;
}

int sap__krylov_check(kry_solve *s, double iter, double nrm)
{
    s->iter = iter;
    s->relres = nrm / s->refnorm;
    if (record(s, s->relres)) return 1;
    char it[32];
    if (!isfinite(s->relres)) {
        fmt_iter(it, sizeof(it), iter);
        s->reason = KRY_NONFINITE;
        snprintf(s->msg, sizeof(s->msg), "%s: the residual norm became %g at iteration %s", s->method, nrm, it);
        return 1;
    }
    int stop = 0;
    const sap_krylov_options *o = &s->K->opt;
    if (o->monitor && !s->quiet) stop = o->monitor(o->monitor_state, iter, s->relres);
    if (s->relres <= s->tol) {
        s->reason = KRY_CONVERGED;
        return 1;
    }
    if (stop) {
        fmt_iter(it, sizeof(it), iter);
        s->reason = KRY_MONITOR;
        snprintf(s->msg, sizeof(s->msg), "%s: stopped by the monitor at iteration %s (relative residual %.3e)",
                 s->method, it, s->relres);
        return 1;
    }
    if (s->relres < s->stag_best * (1.0 - 1e-3)) {
        s->stag_best = s->relres;
        s->stag_iter = iter;
    } else if (o->stagnation_window > 0 && iter - s->stag_iter >= (double)o->stagnation_window) {
        fmt_iter(it, sizeof(it), iter);
        s->reason = KRY_STAGNATED;
        snprintf(s->msg, sizeof(s->msg),
                 "%s: stagnated at iteration %s: best relative residual %.3e not improved by 1e-3 in %lld iterations",
                 s->method, it, s->stag_best, (long long)o->stagnation_window);
        return 1;
    }
    if (iter >= s->maxit) {
        fmt_iter(it, sizeof(it), iter);
        s->reason = KRY_MAXIT;
        snprintf(s->msg, sizeof(s->msg), "%s: %s iterations done, last iterate's relative residual %.3e > tol %.3e", s->method, it,
                 s->relres, s->K->opt.tol);
        return 1;
    }
    return 0;
}

int sap__krylov_breakdown(kry_solve *s, const char *what, double v)
{
    char it[32];
    fmt_iter(it, sizeof(it), s->iter);
    s->reason = isfinite(v) ? KRY_BREAKDOWN : KRY_NONFINITE;
    snprintf(s->msg, sizeof(s->msg), "%s: breakdown at iteration %s: %s = %g", s->method, it, what, v);
    return 1;
}

sap_status sap__krylov_track_best(kry_solve *s, const sap_vec *state)
{
    if (!(s->relres < 0.5 * s->best_saved)) return SAP_OK;
    s->best_saved = s->relres;
    return s->ops->copy(s->ctx, state, s->xbest);
}

sap_status sap__krylov_restore_best(kry_solve *s, sap_vec *state)
{
    if (s->reason == KRY_CONVERGED || !isfinite(s->best_saved)) return SAP_OK;
    if (s->relres <= s->best_saved) return SAP_OK; /* (a NaN residual restores) */
    s->relres = s->best_saved;
    return s->ops->copy(s->ctx, s->xbest, state);
}

/* the side a method runs with: symmetric (CG: monitors ||r||), the one asked for, or the
 * only one it has (FGMRES: right) */
kry_side sap__krylov_pick_side(const sap_krylov_method *m, int have_p, sap_precond_side want)
{
    if (!have_p || (m->sides & KRY_SIDES_SYMMETRIC)) return KRY_SIDE_NONE;
    if (want == SAP_PRECOND_LEFT) return (m->sides & KRY_SIDES_LEFT) ? KRY_SIDE_LEFT : KRY_SIDE_RIGHT;
    return (m->sides & KRY_SIDES_RIGHT) ? KRY_SIDE_RIGHT : KRY_SIDE_LEFT;
}

/* the inner solve's monitor: the outer monitor at the outer iteration count */
static int inner_monitor(void *state, double it, double rel)
{
    kry_solve *o = state;
    const sap_krylov_options *oo = &o->K->opt;
    if (record(o, rel * o->inner_scale)) return 1; /* out of memory: o->reason = KRY_ERROR */
    if (!oo->monitor) return 0;
    return oo->monitor(oo->monitor_state, o->iter + it, rel * o->inner_scale);
}

sap_status sap__krylov_inner_solve(kry_solve *s, int inner_id, sap_precision prec, const sap_vec *r, sap_vec *d,
                                   double tol, double maxit, double scale, double *iters, kry_reason *reason)
{
    sap_context *ctx = s->ctx;
    const sap_backend_ops *ops = s->ops;
    sap_status st = SAP_OK;
    sap_krylov *I = NULL;
    *iters = 0.0;
    *reason = KRY_ERROR;
    const sap_krylov_method *m = sap__krylov_find_id(inner_id);
    if (!m || m->param_is_method)
        SAP_FAIL(ctx, SAP_ERR_INVALID, "%s: inner method %d is not a Krylov method", s->method, inner_id);
    sap_krylov *K = s->K;
    if (K->inner && (int)K->inner->opt.type != inner_id) {
        sap_krylov_destroy(K->inner);
        K->inner = NULL;
    }
    if (!K->inner) {
        sap_krylov_options o;
        sap_krylov_options_init(&o);
        o.type = (sap_krylov_type)inner_id;
        o.side = K->opt.side;
        o.history = 0;
        o.sync_timing = K->opt.sync_timing;
        SAP_TRY(sap_krylov_create(ctx, &o, &K->inner));
    }
    I = K->inner;
    I->opt.tol = tol;
    I->opt.maxit = (sap_int)maxit;
    I->opt.monitor = inner_monitor;
    I->opt.monitor_state = s;
    const sap_spmat *Af = NULL;
    SAP_TRY(sap__matrix_derived(s->M, 0, prec, SAP_FORMAT_AUTO, &Af));
    const int nw = m->nvec(I->param);
    SAP_TRY(sap__krylov_vectors(I, &I->vec, s->n, prec, nw + 3));
    kry_solve t;
    memset(&t, 0, sizeof(t));
    t.K = I;
    t.ctx = ctx;
    t.ops = ops;
    t.M = s->M;
    t.A = Af;
    t.P = s->P;
    t.n = s->n;
    t.st = s->st;
    t.sync = s->sync;
    t.maxit = maxit;
    t.tol = tol;
    t.best_saved = INFINITY;
    t.side = sap__krylov_pick_side(m, t.P != NULL, I->opt.side);
    snprintf(t.method, sizeof(t.method), "%s", m->name);
    t.b = &I->vec.v[0];
    t.x = &I->vec.v[1];
    t.xbest = &I->vec.v[2];
    t.w = &I->vec.v[3];
    t.nw = nw;
    for (int i = 0; i < nw; i++) SAP_TRY(ops->set(ctx, &t.w[i], 0.0));
    SAP_TRY(ops->copy(ctx, r, t.b));
    SAP_TRY(ops->set(ctx, t.x, 0.0));
    t.x0_zero = 1; /* the correction starts from zero: its first residual is r */
    SAP_TRY(ops->nrm2(ctx, t.b, &t.bnorm));
    if (!(t.bnorm > 0.0) || !isfinite(t.bnorm)) {
        /* r underflowed (or is not finite) in the inner precision: nothing to correct */
        SAP_TRY(ops->set(ctx, d, 0.0));
        *reason = isfinite(t.bnorm) ? KRY_BREAKDOWN : KRY_NONFINITE;
        snprintf(s->msg, sizeof(s->msg), "%s: the residual has norm %g in the inner precision", s->method, t.bnorm);
        goto cleanup;
    }
    t.refnorm = t.bnorm;
    if (t.side == KRY_SIDE_LEFT) {
        SAP_TRY(sap__krylov_prec(&t, t.b, t.xbest));
        SAP_TRY(ops->nrm2(ctx, t.xbest, &t.refnorm));
        if (!(t.refnorm > 0.0) || !isfinite(t.refnorm)) {
            SAP_TRY(ops->set(ctx, d, 0.0));
            *reason = isfinite(t.refnorm) ? KRY_BREAKDOWN : KRY_NONFINITE;
            snprintf(s->msg, sizeof(s->msg), "%s: the preconditioned residual has norm %g in the inner precision",
                     s->method, t.refnorm);
            goto cleanup;
        }
    }
    s->inner_scale = scale;
    t.reason = KRY_RUNNING;
    SAP_TRY(m->run(&t));
    if (s->reason == KRY_ERROR) {
        st = s->err;
        goto cleanup;
    }
    if (t.reason == KRY_ERROR) {
        st = t.err;
        goto cleanup;
    }
    *iters = t.iter;
    *reason = t.reason;
    if (t.reason != KRY_CONVERGED && t.msg[0])
        snprintf(s->msg, sizeof(s->msg), "%.31s: inner %.360s", s->method, t.msg);
    SAP_TRY(ops->copy(ctx, t.x, d));
cleanup:
    if (I) {
        I->opt.monitor = NULL;
        I->opt.monitor_state = NULL;
    }
    return st;
}

/* ---- solve ------------------------------------------------------------------------------------ */

sap_status sap__krylov_reason_status(kry_reason r)
{
    switch (r) {
    case KRY_CONVERGED: return SAP_OK;
    case KRY_STAGNATED: return SAP_WARN_STAGNATED;
    case KRY_BREAKDOWN: return SAP_WARN_BREAKDOWN;
    case KRY_NONFINITE: return SAP_ERR_BREAKDOWN;
    case KRY_MONITOR: return SAP_WARN_INTERRUPTED;
    default: return SAP_WARN_NOT_CONVERGED;
    }
}

/* an argument error before the solve started: the status goes into the statistics too */
static sap_status early(sap_krylov_stats *stats, sap_status st)
{
    if (stats) stats->status = st;
    return st;
}

/* The solve: host arrays b, x (sap_krylov_solve) or backend vectors vb, vx
 * (sap__krylov_solve_vec; b and x NULL then). */
static sap_status solve_core(sap_krylov *K, sap_matrix *A, sap_precond *P, const double *b, double *x,
                             const sap_vec *vb, sap_vec *vx, int x_zero, sap_krylov_stats *stats)
{
    if (stats) memset(stats, 0, sizeof(*stats));
    if (!K) return early(stats, SAP_ERR_INVALID);
    sap_context *ctx = K->ctx;
    const double t_start = sap__wtime();
    if (!A || !A->sm) return early(stats, SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_solve: matrix is NULL"));
    if (A->ctx != ctx)
        return early(stats, SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_solve: matrix of another context"));
    if (A->nrows != A->ncols)
        return early(stats, SAP_ERROR(ctx, SAP_ERR_NOT_SQUARE, "sap_krylov_solve: the matrix is %lld x %lld",
                                      (long long)A->nrows, (long long)A->ncols));
    const sap_int n = A->nrows;
    if (vb || vx) {
        if (!vb || !vx || vb->n != n || vx->n != n || vb->prec != SAP_DOUBLE || vx->prec != SAP_DOUBLE)
            return early(stats, SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_solve: b and x must be double vectors of "
                                                                "length %lld", (long long)n));
    } else if (n > 0 && (!b || !x)) {
        return early(stats, SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_solve: b or x is NULL"));
    }
    if (P && P->ctx != ctx)
        return early(stats, SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_krylov_solve: preconditioner of another context"));
    sap_status st = sap__precond_check_ready(P, n);
    if (st < 0) return early(stats, st);

    const sap_krylov_method *m = K->method;
    const sap_backend_ops *ops = sap__ops(ctx);
    double truerel = NAN;
    sap_krylov_stats S;
    memset(&S, 0, sizeof(S));
    K->hist_len = 0;

    kry_solve s;
    memset(&s, 0, sizeof(s));
    s.K = K;
    s.ctx = ctx;
    s.ops = ops;
    s.M = A;
    s.A = A->sm;
    s.P = sap__precond_is_identity(P) ? NULL : P;
    s.n = n;
    s.st = &S;
    s.sync = K->opt.sync_timing;
    s.maxit = (double)K->opt.maxit;
    s.tol = K->opt.tol;
    s.best_saved = INFINITY;
    if (m->param_is_method)
        snprintf(s.method, sizeof(s.method), "%s(%s)", m->name, sap_krylov_name((sap_krylov_type)(K->param - 1)));
    else if (m->max_param) snprintf(s.method, sizeof(s.method), "%s(%d)", m->name, K->param);
    else snprintf(s.method, sizeof(s.method), "%s", m->name);
    /* the side the method supports: symmetric (CG: monitors ||r||), the one asked for, or
     * the only one it has (FGMRES: right) */
    s.side = sap__krylov_pick_side(m, s.P != NULL, K->opt.side);

    SAP_TRY(sap__krylov_wres_room(K, 1)); /* NaN until a weighted residual is computed */
    if (K->opt.history && K->hist_cap == 0) {
        double want = (double)K->opt.maxit * m->steps + 2;
        sap_int cap = want < KRY_HIST_INITIAL ? (sap_int)want : KRY_HIST_INITIAL;
        SAP_ALLOC(ctx, K->hist, cap);
        K->hist_cap = cap;
    }
    const int nw = m->nvec(K->param);
    if (nw < 0) SAP_FAIL(ctx, SAP_ERR_INVALID, "%s: the method asks for %d work vectors", s.method, nw);
    SAP_TRY(sap__krylov_vectors(K, &K->vec, n, A->sm->prec, nw + 3));
    s.b = &K->vec.v[0];
    s.x = &K->vec.v[1];
    s.xbest = &K->vec.v[2];
    s.w = &K->vec.v[3];
    s.nw = nw;
    for (int i = 0; i < nw; i++) SAP_TRY(ops->set(ctx, &s.w[i], 0.0));
    if (vb) {
        SAP_TRY(ops->copy(ctx, vb, s.b));
        SAP_TRY(ops->copy(ctx, vx, s.x));
    } else {
        double tx = sap__wtime();
        SAP_TRY(ops->vec_upload(ctx, s.b, b));
        S.time_transfer += sap__wtime() - tx;
        /* a zero initial guess (the usual one; x_zero: the caller knows it is) is set on the
         * backend, not uploaded, and the first residual is b (s.x0_zero) */
        s.x0_zero = x_zero || sap__host_all_zero(ctx, x, n);
        tx = sap__wtime();
        SAP_TRY(s.x0_zero ? ops->set(ctx, s.x, 0.0) : ops->vec_upload(ctx, s.x, x));
        if (!s.x0_zero) S.time_transfer += sap__wtime() - tx;
    }
    SAP_TRY(ops->nrm2(ctx, s.b, &s.bnorm));
    if (!isfinite(s.bnorm)) SAP_FAIL(ctx, SAP_ERR_NONFINITE, "%s: the right-hand side b contains NaN or Inf", s.method);
    double sysscale = 1.0; /* the system solved is A (s x) = s b */
    if (s.bnorm == 0.0) {
        /* ||b|| may underflow for a nonzero b (entries below ~1e-162): scale b and x0 by a
         * power of two that brings max |b_i| near 1, and x back at the end */
        double bmax = 0.0;
        for (sap_int i = 0; b && i < n; i++) bmax = fmax(bmax, fabs(b[i]));
        for (int r = 0; vb && r < 2 && s.bnorm == 0.0; r++) { /* backend b: by 2^500 steps */
            sysscale *= 0x1p500;
            SAP_TRY(ops->scale(ctx, s.b, 0x1p500));
            SAP_TRY(ops->scale(ctx, s.x, 0x1p500));
            SAP_TRY(ops->nrm2(ctx, s.b, &s.bnorm));
        }
        if (bmax > 0.0) {
            int e = 0;
            frexp(bmax, &e);
            sysscale = ldexp(1.0, -e);
            SAP_TRY(ops->scale(ctx, s.b, sysscale));
            SAP_TRY(ops->scale(ctx, s.x, sysscale));
            SAP_TRY(ops->nrm2(ctx, s.b, &s.bnorm));
        }
    }
    if (s.bnorm == 0.0) {
        /* b = 0: x = 0 is the solution */
        if (vx) SAP_TRY(ops->set(ctx, vx, 0.0));
        for (sap_int i = 0; x && i < n; i++) x[i] = 0.0;
        S.status = SAP_OK;
        S.time_setup = S.time_total = sap__wtime() - t_start;
        S.history = K->hist;
        S.history_length = K->hist_len;
        if (stats) *stats = S;
        return SAP_OK;
    }
    double xnorm = 0.0;
    if (!s.x0_zero) SAP_TRY(ops->nrm2(ctx, s.x, &xnorm));
    if (!isfinite(xnorm)) SAP_FAIL(ctx, SAP_ERR_NONFINITE, "%s: the initial guess x contains NaN or Inf", s.method);
    s.refnorm = s.bnorm;
    if (s.side == KRY_SIDE_LEFT) {
        SAP_TRY(sap__krylov_prec(&s, s.b, s.xbest));
        SAP_TRY(ops->nrm2(ctx, s.xbest, &s.refnorm));
        if (!(s.refnorm > 0.0) || !isfinite(s.refnorm))
            SAP_FAIL(ctx, s.refnorm == 0.0 ? SAP_ERR_SINGULAR : SAP_ERR_BREAKDOWN,
                     "%s: the preconditioned right-hand side M^-1 b has norm %g", s.method, s.refnorm);
    }
    if (m->dual && s.P) SAP_TRY(transposed_precond(&s));
    S.time_setup = sap__wtime() - t_start;

    int restarts = 0;
    sap_vec *rtrue = s.xbest;
    for (;;) {
        s.reason = KRY_RUNNING;
        s.best_saved = INFINITY;
        s.msg[0] = '\0';
        s.rtrue = NULL;
        SAP_TRY(m->run(&s));
        s.x0_zero = 0;
        if (s.reason == KRY_ERROR) {
            st = s.err;
            goto cleanup;
        }
        /* the true residual: the driver's when it has it (s.rtrue), else computed in the
         * scratch vector xbest */
        double tn = 0.0;
        if (s.rtrue) {
            rtrue = s.rtrue;
            tn = s.rtrue_nrm;
        } else {
            rtrue = s.xbest;
            SAP_TRY(ops->spmv(ctx, s.A, 1.0, s.x, 0.0, s.xbest));
            S.spmv_count++;
            SAP_TRY(ops->axpby_nrm2(ctx, 1.0, s.b, -1.0, s.xbest, &tn));
        }
        truerel = tn / s.bnorm;
        if (s.reason != KRY_CONVERGED) break;
        if (truerel <= K->opt.tol) break;
        if (!(s.iter < s.maxit) || restarts >= KRY_MAX_RESTARTS || !isfinite(truerel)) {
            s.reason = KRY_MAXIT;
            snprintf(s.msg, sizeof(s.msg),
                     "%s: the recursive residual %.3e reached the tolerance but the true residual is %.3e > %.3e "
                     "(after %d restart%s)",
                     s.method, s.relres, truerel, K->opt.tol, restarts, restarts == 1 ? "" : "s");
            break;
        }
        /* restart from the true residual with a tighter internal tolerance */
        restarts++;
        double f = K->opt.tol / truerel;
        s.tol *= f < 1e-3 ? 1e-3 : (f > 0.5 ? 0.5 : f);
    }
    SAP_TRY(sap__krylov_weigh(K, 1, n, s.b, rtrue, 0)); /* rtrue: b - A x */
    int look = 0; /* the host x has a NaN or Inf to find */
    if (vx) {
        double xn = 0.0;
        SAP_TRY(ops->copy(ctx, s.x, vx));
        if (sysscale != 1.0) SAP_TRY(ops->scale(ctx, vx, 1.0 / sysscale));
        SAP_TRY(ops->nrm2(ctx, vx, &xn));
        if (!isfinite(xn) && s.reason != KRY_NONFINITE && s.reason != KRY_ERROR) {
            s.reason = KRY_NONFINITE;
            snprintf(s.msg, sizeof(s.msg), "%s: the iterate x became NaN or Inf at iteration %g", s.method, s.iter);
        }
    } else {
        /* x scaled back and checked on the backend: ||x|| finite means every entry is; the
         * host looks for the entry (for the message) only when it is not */
        double xn = 0.0;
        if (sysscale != 1.0) SAP_TRY(ops->scale(ctx, s.x, 1.0 / sysscale));
        SAP_TRY(ops->nrm2(ctx, s.x, &xn)); /* (its result: the backend done) */
        const double tx = sap__wtime();
        SAP_TRY(ops->vec_download(ctx, s.x, x));
        S.time_transfer += sap__wtime() - tx;
        look = !isfinite(xn);
    }
    for (sap_int i = 0; look && i < n; i++) {
        if (!isfinite(x[i]) && s.reason != KRY_NONFINITE && s.reason != KRY_ERROR) {
            /* a warning (or a recursive convergence) must not hand back a non-finite x */
            s.reason = KRY_NONFINITE;
            snprintf(s.msg, sizeof(s.msg), "%s: the iterate x became NaN or Inf (x[%lld] = %g) at iteration %g",
                     s.method, (long long)i, x[i], s.iter);
        }
    }
    st = sap__krylov_reason_status(s.reason);
    /* the driver's message names the residual where it stopped; the x handed back is the
     * best iterate, so its true residual (the figure every report prints) is named too */
    if (st != SAP_OK)
        st = SAP_ERROR(ctx, st, "%s; x returned: the best iterate, true residual ||b - A x|| / ||b|| = %.3e",
                       s.msg[0] ? s.msg : sap_status_string(st), truerel);

cleanup:
    sap_precond_destroy(s.PT);
    S.iterations = s.iter;
    S.relative_residual = s.relres;
    S.true_residual = truerel;
    S.status = st;
    S.history = K->hist;
    S.history_length = K->hist_len;
    S.time_total = sap__wtime() - t_start;
    S.time_vector = S.time_total - S.time_setup - S.time_spmv - S.time_precond;
    if (S.time_vector < 0.0) S.time_vector = 0.0;
    if (stats) *stats = S;
    return st;
}

sap_status sap_krylov_solve(sap_krylov *K, sap_matrix *A, sap_precond *P, const double *b, double *x,
                            sap_krylov_stats *stats)
{
    return solve_core(K, A, P, b, x, NULL, NULL, 0, stats);
}

sap_status sap__krylov_solve_zero(sap_krylov *K, sap_matrix *A, sap_precond *P, const double *b, double *x,
                                  sap_krylov_stats *stats)
{
    return solve_core(K, A, P, b, x, NULL, NULL, 1, stats);
}

sap_status sap__krylov_solve_vec(sap_krylov *K, sap_matrix *A, sap_precond *P, const sap_vec *b, sap_vec *x,
                                 sap_krylov_stats *stats)
{
    if (!b || !x) {
        if (stats) memset(stats, 0, sizeof(*stats));
        return K ? SAP_ERROR(K->ctx, SAP_ERR_INVALID, "sap_krylov_solve: b or x is NULL") : SAP_ERR_INVALID;
    }
    return solve_core(K, A, P, NULL, NULL, b, x, 0, stats);
}
