/* solver_solve.c -- sap_solver_solve / sap_solver_solve_many: the current attempt's
 * method as the inner solve of the refinement, one column through the fallback chain, and
 * a batch method's columns at once (band-pivot: one dgbtrs for all of them). */
#include "solver/solver_internal.h"

#include <math.h>
#include <string.h>

/* The state of an attempt used as an inner solve: iterations (a band solve counts one)
 * and the seconds in the Krylov method or the band solve are added up (NULL: not). */
typedef struct att_inner {
    sap_solver *S;
    sap__attempt *a;
    double *iters, *tkry;
} att_inner;

/* sap__refine_solve_fn of the current attempt: its method's inner solve. */
static sap_status att_solve(void *state, sap_int m, const double *R, sap_int ldr, const double *X0, sap_int ldx0,
                            double *X, sap_int ldx)
{
    const att_inner *in = state;
    return in->a->type->solve(in->S, in->a, m, R, ldr, X0, ldx0, X, ldx, in->iters, in->tkry);
}

/* Solves one column with the current attempt, refining in the original system as its
 * method says: up to refine_passes corrections, each taken only when it lowers the
 * residual, and what a pass that does not halve it does (a Krylov method stops the
 * column; band-pivot, one pass is one triangular solve, goes on). */
static sap_status solve_col(sap_solver *S, const double *b, double *x, double *iters, double *res, double *tkry)
{
    sap__attempt *a = S->att;
    const sap_int n = S->A->nrows;
    const double tol = S->opt.krylov.tol;
    att_inner in = {S, a, iters, tkry};
    const sap__refine rf = {.A = S->A,
                            .tol = tol,
                            .max_pass = a->type->refine_passes,
                            .take = SAP__REFINE_TAKE_LOWER,
                            .slow = a->type->refine_slow,
                            .solve = att_solve,
                            .state = &in,
                            .R = S->w,
                            .D = S->w + n,
                            .t = S->w + 5 * n,
                            .inner_rel = &a->true_rel};
    double rel = 0;
    sap_status ks = SAP_OK;
    int passes = 0;
    *res = 0;
    sap_status st = sap__solver_refine(&rf, 1, b, n > 0 ? n : 1, x, n > 0 ? n : 1, &rel, &ks, &passes);
    if (st < 0) return st;
    *res = rel;
    if (!isfinite(rel))
        return SAP_ERROR(S->ctx, SAP_ERR_BREAKDOWN, "sap_solver %s: non-finite residual", sap_solver_method_name(a->method));
    if (rel <= tol) return SAP_OK;
    if (S->interrupted)
        return SAP_ERROR(S->ctx, SAP_WARN_INTERRUPTED,
                         "sap_solver %s: interrupted by the monitor; x returned: the best so far, true residual "
                         "||b - A x|| / ||b|| = %.3e",
                         sap_solver_method_name(a->method), rel);
    if (ks > 0 || ks == SAP_ERR_BREAKDOWN) return ks;
    return SAP_ERROR(S->ctx, SAP_WARN_INEXACT, "sap_solver %s: residual %.3g of the original system above tol %.3g",
                     sap_solver_method_name(a->method), rel, tol);
}

/* One column through the chain.  x0 is a copy of the initial guess. */
static sap_status solve_col_chain(sap_solver *S, const double *b, double *x, const double *x0, double *iters,
                                  double *res, double *tkry)
{
    const sap_int n = S->A->nrows;
    for (;;) {
        sap__attempt *a = S->att;
        double it = 0, t0 = sap__wtime();
        const int expected = sap__solver_can_fall_back(S);
        S->budget_stop = 0;
        S->slope_n = 0;
        S->slope_last_it = 0;
        sap__solver_try_begin(S, expected);
        sap_status st = solve_col(S, b, x, &it, res, tkry);
        if (st == SAP_WARN_INTERRUPTED && S->budget_stop && !S->interrupted) {
            /* the time box stopped it: a failure of this method, the chain goes on */
            st = SAP_ERROR(S->ctx, S->budget_stop == 2 ? SAP_WARN_STAGNATED : SAP_WARN_NOT_CONVERGED,
                           "sap_solver %s: %s", sap_solver_method_name(a->method), S->budget_note);
        }
        sap__solver_try_end(S, expected);
        if (st == SAP_OK) {
            /* a method that solved is the solver's: later solves are not time-boxed */
            a->budget_set = 1;
            a->budget = 0;
        }
        if (a->itry >= 0 && a->itry < S->stats.ntries) {
            sap_solver_try *t = &S->stats.tried[a->itry];
            t->status = st;
            t->iterations += it;
            t->time += sap__wtime() - t0;
            const char *sep = a->note[0] ? "; " : "";
            if (a->budget > 0) t->budget = a->budget;
            if (S->budget_stop && st != SAP_OK) /* a stop that came with convergence is no cut */
                sap__solver_try_note(S, a->itry, "%s after %.4g it (res %.1e): %s", sap_status_name(st), it, *res,
                                     S->budget_note);
            else if (st == SAP_OK)
                sap__solver_try_note(S, a->itry, "converged, %.4g it, res %.1e%s%s", t->iterations, *res, sep, a->note);
            else
                sap__solver_try_note(S, a->itry, "%s after %.4g it (res %.1e)%s%s", sap_status_name(st), it, *res, sep,
                                     a->note);
        }
        *iters += it;
        if (st == SAP_OK) return st;
        if (st == SAP_WARN_INTERRUPTED) return st; /* the caller's decision: no fallback */
        if (st == SAP_ERR_NONFINITE || st == SAP_ERR_INVALID || !sap__solver_can_fall_back(S)) return st;
        sap__log(S->ctx, SAP_PRINT_INFO, "sap_solver: %s failed (%s, residual %.2e), trying %s",
                 sap_solver_method_name(a->method), sap_status_name(st), *res,
                 sap_solver_method_name(S->chain[S->ichain + 1]));
        const int was_direct = a->type->direct;
        sap_status cb = sap__solver_chain_build(S, S->ichain + 1);
        if (cb < 0 || cb == SAP_WARN_INTERRUPTED) return cb; /* interrupted: x is the failed method's */
        /* the next method starts from the initial guess, or from the direct band solve's
         * refined x (close, unless it diverged) */
        const int finite = sap__host_first_nonfinite(S->ctx, x, n) == n;
        if (!finite || !was_direct) memcpy(x, x0, sizeof(double) * (size_t)n);
    }
}

/* A batch method (band-pivot, the SaP methods' lockstep Krylov) with several columns: one
 * inner solve for all of them, then refinement steps batched over the columns still above
 * tol (a column stops when a step does not lower its residual, all of them after a step
 * that halved none).  *iters: the iterations of all columns (a Krylov method's own count;
 * a direct solve counts one a solve). */
static sap_status solve_many_batch(sap_solver *S, sap_int k, const double *B, sap_int ldb, double *X, sap_int ldx,
                                   int *done, double *iters, double *worst, double *tkry)
{
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows;
    const double tol = S->opt.krylov.tol;
    sap_status st = SAP_OK;
    double *R = NULL, *D = NULL, *rel = NULL, *irel = NULL;
    sap_status *cst = NULL;
    int *passes = NULL;
    SAP_TRY(sap__solver_batch_work(S, 0, 2 * (size_t)n * (size_t)k + 1, &R));
    D = R + (size_t)n * (size_t)k;
    SAP_ALLOC(ctx, rel, k);
    SAP_ALLOC(ctx, cst, k);
    SAP_ALLOC(ctx, passes, k);
    SAP_ALLOC(ctx, irel, k);
    double kit = 0; /* the inner solves' own count (Krylov: iterations; direct: calls) */
    att_inner in = {S, S->att, &kit, tkry};
    const sap__refine rf = {.A = S->A,
                            .tol = tol,
                            .max_pass = S->att->type->refine_passes,
                            .take = SAP__REFINE_TAKE_LOWER,
                            .slow = SAP__REFINE_SLOW_STOPS_ALL,
                            .solve = att_solve,
                            .state = &in,
                            .R = R,
                            .D = D,
                            .t = S->w,
                            .inner_rel = irel};
    S->att->true_rels = irel;
    st = sap__solver_refine(&rf, k, B, ldb, X, ldx, rel, cst, passes);
    S->att->true_rels = NULL;
    if (st < 0) goto cleanup;
    /* a Krylov method's own count; a direct one counts its calls in kit, a column here one
     * solve and its passes */
    *iters = S->att->kry ? kit : 0;
    for (sap_int j = 0; j < k; j++) {
        if (!S->att->kry) *iters += 1 + passes[j];
        done[j] = rel[j] <= tol;
        if (rel[j] > *worst || !isfinite(rel[j])) *worst = rel[j];
    }
cleanup:
    sap__free(ctx, rel);
    sap__free(ctx, cst);
    sap__free(ctx, passes);
    sap__free(ctx, irel);
    return st;
}

/* The largest true residual ||b - A x|| / ||b|| of columns j0.. of X (the initial guesses of
 * columns a monitor stopped before they were solved) into *worst. */
static sap_status worst_residual(sap_solver *S, sap_int j0, sap_int k, const double *B, sap_int ldb, const double *X,
                                 sap_int ldx, double *worst)
{
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    double *r = NULL;
    SAP_ALLOC(ctx, r, n > 0 ? n : 1);
    for (sap_int j = j0; j < k; j++) {
        memcpy(r, B + j * ldb, sizeof(double) * (size_t)n);
        SAP_TRY(sap_csr_spmv(S->A, -1.0, X + j * ldx, 1.0, r));
        const double bn = sap__solver_nrm2(B + j * ldb, n), rn = sap__solver_nrm2(r, n);
        const double rel = bn > 0 ? rn / bn : rn;
        if (rel > *worst || !isfinite(rel)) *worst = rel;
    }
cleanup:
    sap__free(ctx, r);
    return st;
}

/* A monitor stopped the setup (or the chain's rebuild) before any method was built: X keeps
 * the initial guesses, whose residual the statistics give. */
static sap_status stopped_before_setup(sap_solver *S, sap_int k, const double *B, sap_int ldb, const double *X,
                                       sap_int ldx)
{
    sap_solver_stats *s = &S->stats;
    s->nrhs = k;
    s->iterations = 0;
    s->relative_residual = 0;
    s->time_kry = 0;
    s->time_solve = 0;
    sap_status st = worst_residual(S, 0, k, B, ldb, X, ldx, &s->relative_residual);
    if (st < 0) return st;
    s->status = SAP_WARN_INTERRUPTED;
    sap__solver_relay(S);
    return SAP_WARN_INTERRUPTED;
}

sap_status sap_solver_solve_many(sap_solver *S, sap_int nrhs, const double *B, sap_int ldb, double *X, sap_int ldx)
{
    if (!S) return SAP_ERR_INVALID;
    sap_context *ctx = S->ctx;
    const sap_int n = S->A->nrows;
    sap_status st = SAP_OK;
    int *done = NULL;
    /* a solver on device arrays without a host copy of A: host vectors need one */
    if (S->dev && !S->A->rowptr) {
        st = sap__solver_dev_fetch(S, "a solve with host vectors");
        if (st < 0) return st;
    }
    double *x0 = NULL;
    if (nrhs < 0 || ldb < n || ldx < n || (nrhs > 0 && n > 0 && (!B || !X)))
        return SAP_ERROR(ctx, SAP_ERR_INVALID, "sap_solver_solve_many: nrhs = %lld, ldb = %lld, ldx = %lld, n = %lld%s",
                         (long long)nrhs, (long long)ldb, (long long)ldx, (long long)n,
                         (!B || !X) ? ", NULL array" : "");
    if (nrhs > 0 && n > 0) {
        /* the columns in order, each scanned on the context's threads: the first NaN/Inf of
         * the first column that has one is reported (b's before x's at the same row) */
        sap_int bad_col = nrhs, bad_i = 0;
        int bad_x = 0;
        for (sap_int j = 0; j < nrhs && bad_col == nrhs; j++) {
            const sap_int fb = sap__host_first_nonfinite(ctx, B + j * ldb, n);
            const sap_int fx = sap__host_first_nonfinite(ctx, X + j * ldx, fb);
            if (fb < n || fx < fb) {
                bad_col = j;
                bad_x = fx < fb;
                bad_i = bad_x ? fx : fb;
            }
        }
        if (bad_col < nrhs) {
            if (!bad_x)
                return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_solver_solve: b[%lld] of column %lld is %g",
                                 (long long)bad_i, (long long)bad_col, B[bad_i + bad_col * ldb]);
            return SAP_ERROR(ctx, SAP_ERR_NONFINITE, "sap_solver_solve: initial x[%lld] of column %lld is %g",
                             (long long)bad_i, (long long)bad_col, X[bad_i + bad_col * ldx]);
        }
    }
    S->interrupted = 0;
    if (!S->setup_done) {
        /* the first b is the probe's: its steps start this solve (sap__solver_probe_guess) */
        st = sap_solver_setup_rhs(S, nrhs > 0 ? B : NULL);
        if (st < 0) return st;
        if (st == SAP_WARN_INTERRUPTED) return stopped_before_setup(S, nrhs, B, ldb, X, ldx);
    } else if (!S->att) {
        /* a previous solve used up the chain (e.g. out of memory) or was interrupted: start
         * it again */
        sap_status cb = sap__solver_chain_build(S, 0);
        if (cb == SAP_WARN_INTERRUPTED) return stopped_before_setup(S, nrhs, B, ldb, X, ldx);
        if (cb < 0) {
            sap__solver_relay(S);
            return cb;
        }
    }
    const double t_start = sap__wtime();
    sap_solver_stats *s = &S->stats;
    s->nrhs = nrhs;
    s->iterations = 0;
    s->relative_residual = 0;
    s->time_kry = 0;
    sap_status worst = SAP_OK;
    double tkry = 0, worst_res = 0;
    SAP_CALLOC(ctx, done, nrhs > 0 ? nrhs : 1);
    SAP_ALLOC(ctx, x0, n > 0 ? n : 1);
    if (S->att->type->batch && nrhs > 1) {
        double t0 = sap__wtime();
        double it = 0;
        SAP_TRY(solve_many_batch(S, nrhs, B, ldb, X, ldx, done, &it, &worst_res, &tkry));
        sap__attempt *a = S->att;
        if (a->itry >= 0 && a->itry < s->ntries) {
            sap_solver_try *t = &s->tried[a->itry];
            int ok = 1;
            for (sap_int j = 0; j < nrhs; j++) ok &= done[j];
            t->status = ok ? SAP_OK : SAP_WARN_INEXACT;
            t->iterations += it;
            t->time += sap__wtime() - t0;
            sap__solver_try_note(S, a->itry, "%d columns, %s, worst res %.1e; %s", (int)nrhs, a->type->batch,
                                 worst_res, a->note);
        }
        s->iterations += it;
        if (worst_res > s->relative_residual) s->relative_residual = worst_res;
    }
    for (sap_int j = 0; j < nrhs; j++) {
        if (done[j]) continue;
        if (S->interrupted) {
            /* the columns left keep their initial guesses */
            worst = SAP_ERROR(ctx, SAP_WARN_INTERRUPTED,
                              "sap_solver: interrupted by the monitor after %lld of %lld right-hand sides",
                              (long long)j, (long long)nrhs);
            SAP_TRY(worst_residual(S, j, nrhs, B, ldb, X, ldx, &s->relative_residual));
            break;
        }
        double it = 0, res = 0;
        double *xj = X + j * ldx;
        memcpy(x0, xj, sizeof(double) * (size_t)n);
        sap_status sj = solve_col_chain(S, B + j * ldb, xj, x0, &it, &res, &tkry);
        s->iterations += it;
        if (sj < 0 && sj != SAP_ERR_BREAKDOWN) {
            st = sj;
            goto cleanup;
        }
        if (res > s->relative_residual || !isfinite(res)) s->relative_residual = res;
        if (sj != SAP_OK && (worst == SAP_OK || sj < 0 || (sj == SAP_WARN_INTERRUPTED && worst > 0))) worst = sj;
        if (!S->att) {
            if (sj == SAP_WARN_INTERRUPTED)
                SAP_TRY(worst_residual(S, j + 1, nrhs, B, ldb, X, ldx, &s->relative_residual));
            break;
        }
    }
    st = worst;
cleanup:
    sap__solver_probe_forget(S); /* the probe's iterate served the first solve, or nothing */
    if (S->att) sap__solver_att_stats(S, S->att);
    s->time_kry = tkry;
    s->time_solve = sap__wtime() - t_start;
    s->time_refine = s->time_solve - tkry;
    s->status = st;
    sap__free(ctx, done);
    sap__free(ctx, x0);
    if (st != SAP_OK) sap__solver_relay(S);
    else if (S->hctx) S->hctx->errmsg[0] = 0; /* failures the chain handled */
    return st;
}

sap_status sap_solver_solve(sap_solver *S, const double *b, double *x)
{
    if (!S) return SAP_ERR_INVALID;
    const sap_int n = S->A->nrows;
    return sap_solver_solve_many(S, 1, b, n > 0 ? n : 1, x, n > 0 ? n : 1);
}
