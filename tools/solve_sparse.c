/* solve_sparse.c -- owns the SaP pipeline path of `sap solve` (no --precond, --krylov, ...):
 * sets up the k right-hand sides (b, then the --rhs file's columns or b = A x* for random
 * x*), runs sap_solver (setup with its fallback chain, then one solve of all columns), and
 * measures the true residual and the error of every column on the host. */
#define _POSIX_C_SOURCE 200809L /* isatty, fileno under -std=c11 */
#include "solve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double vnorm(const double *v, sap_int n)
{
    double s = 0;
    for (sap_int i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

/* The worst true residual and error over the k columns. */
static void measure(const sap_csr *A, sap_int k, const double *B, const double *X, const double *XS, double *r,
                    solve_outcome *out)
{
    const sap_int n = A->nrows;
    double res = 0, err = XS ? 0 : NAN;
    for (sap_int j = 0; j < k; j++) {
        memcpy(r, B + j * n, sizeof(double) * (size_t)n);
        sap_csr_spmv(A, -1.0, X + j * n, 1.0, r);
        double bn = vnorm(B + j * n, n), rr = bn > 0 ? vnorm(r, n) / bn : vnorm(r, n);
        if (rr > res || !isfinite(rr)) res = rr;
        if (XS) {
            double e = 0, xn = 0;
            for (sap_int i = 0; i < n; i++) {
                e += (X[j * n + i] - XS[j * n + i]) * (X[j * n + i] - XS[j * n + i]);
                xn += XS[j * n + i] * XS[j * n + i];
            }
            e = xn > 0 ? sqrt(e / xn) : sqrt(e);
            if (e > err || !isfinite(e)) err = e;
        }
    }
    out->residual = res;
    out->error = err;
}

int solve_sparse(const solve_args *a, const solve_problem *p, solve_sparse_run *run)
{
    memset(run, 0, sizeof(*run));
    sap_context *ctx = p->ctx;
    const sap_csr *A = p->A;
    const sap_dense *Bfile = p->Bfile;
    solve_outcome *out = &run->out;
    const sap_int n = A->nrows;
    sap_int k = a->nrhs;
    if (Bfile && k > Bfile->ncols) k = Bfile->ncols;
    out->k = k;
    const size_t nn = (size_t)(n > 0 ? n : 1) * (size_t)k;
    double *B = malloc(sizeof(double) * nn), *XS = p->xs ? malloc(sizeof(double) * nn) : NULL;
    double *r = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    out->X = calloc(nn, sizeof(double));
    sap_solver *S = NULL;
    int rc = 1;
    if (!B || !out->X || !r || (p->xs && !XS)) {
        fprintf(stderr, "sap solve: out of memory\n");
        goto done;
    }
    for (sap_int j = 0; j < k; j++) {
        if (j == 0) {
            memcpy(B, p->b, sizeof(double) * (size_t)n);
            if (XS) memcpy(XS, p->xs, sizeof(double) * (size_t)n);
        } else if (Bfile) {
            memcpy(B + j * n, Bfile->val + j * Bfile->ld, sizeof(double) * (size_t)n);
        } else {
            sap_gen_xstar(ctx, n, SAP_XSTAR_RANDOM, 1 + (uint64_t)j, XS + j * n);
            sap_csr_spmv(A, 1.0, XS + j * n, 0.0, B + j * n);
        }
    }
    /* the progress line (a terminal, not --quiet), SIGINT and the refusal of hours-long steps
     * through the solver's monitor */
    run->progress = (solve_progress){isatty(fileno(stderr)) && !a->common.quiet, 0.0, "sap_solver", 0, a->force, "", 0.0};
    sap_solver_options so = a->sopt;
    so.monitor = solve_progress_solver_monitor;
    so.monitor_state = &run->progress;
    so.interrupt = solve_interrupt_flag(); /* SIGINT also inside a band factorization (cpu) */
    double t0 = solve_now();
    sap_status st = sap_solver_create_borrowed(ctx, A, &so, &S); /* A outlives S */
    if (st >= 0) st = sap_solver_setup_rhs(S, k > 0 ? B : NULL); /* the probe solves the first b */
    run->t_setup = solve_now() - t0;
    solve_progress_clear(&run->progress);
    if (run->progress.refused[0]) {
        sap_solver_get_stats(S, &run->ss);
        fprintf(stderr,
                "sap solve: refused: %s (over %.0f min); --force runs it anyway, --opt drop=DELTA narrows the band, "
                "--method picks another method\n",
                run->progress.refused, SAP_SOLVE_REFUSE / 60);
        goto done;
    }
    if (st == SAP_WARN_INTERRUPTED) {
        /* stopped before any method was built: x is the initial guess (zero) */
        sap_solver_get_stats(S, &run->ss);
        out->status = st;
        snprintf(out->message, sizeof(out->message), "%s", sap_context_last_error(ctx));
        measure(A, k, B, out->X, XS, r, out);
        run->t_total = p->t_load + run->t_setup;
        rc = 0;
        goto done;
    }
    if (st < 0) {
        sap_solver_get_stats(S, &run->ss);
        fprintf(stderr, "sap solve: %s: %s\n", sap_status_name(st), sap_context_last_error(ctx));
        for (int i = 0; i < run->ss.ntries; i++)
            fprintf(stderr, "  tried %-10s %s: %s\n", sap_solver_method_name(run->ss.tried[i].method),
                    sap_status_name(run->ss.tried[i].status), run->ss.tried[i].note);
        goto done;
    }
    sap_context_reset_transfer_stats(ctx);
    t0 = solve_now();
    st = sap_solver_solve_many(S, k, B, n, out->X, n);
    run->t_solve = solve_now() - t0;
    solve_progress_clear(&run->progress);
    if (run->progress.refused[0] && st == SAP_WARN_INTERRUPTED) {
        /* a fallback's setup was refused: the x of the method that failed, not converged */
        st = SAP_WARN_NOT_CONVERGED;
        fprintf(stderr, "sap solve: refused the fallback: %s (over %.0f min); --force runs it anyway\n",
                run->progress.refused, SAP_SOLVE_REFUSE / 60);
        snprintf(out->message, sizeof(out->message), "the fallback was refused: %s", run->progress.refused);
        out->status = st;
    }
    if (!run->progress.refused[0]) {
        out->status = st;
        if (st != SAP_OK) snprintf(out->message, sizeof(out->message), "%s", sap_context_last_error(ctx));
    }
    sap_solver_get_stats(S, &run->ss);
    if (st < 0 && st != SAP_ERR_BREAKDOWN) {
        fprintf(stderr, "sap solve: %s: %s\n", sap_status_name(st), out->message);
        goto done;
    }
    measure(A, k, B, out->X, XS, r, out);
    sap_context_get_stats(ctx, &out->transfers);
    run->t_total = p->t_load + run->t_setup + run->t_solve;
    rc = 0;
done:
    sap_solver_destroy(S);
    free(B);
    free(XS);
    free(r);
    return rc;
}

void solve_sparse_free(solve_sparse_run *run)
{
    free(run->out.X);
    run->out.X = NULL;
}
