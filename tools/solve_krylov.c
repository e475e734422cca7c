/* solve_krylov.c -- owns the explicit path of `sap solve` (--krylov, --precond, --side,
 * --format, --precond-precision): builds the SpMV matrix, the preconditioner and the Krylov
 * solver, solves with the progress line, and measures the true residual and the error on
 * the host in double. */
#define _POSIX_C_SOURCE 200809L /* isatty, fileno under -std=c11 */
#include "sap_tool.h"
#include "solve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "bicgstabl(2)", "gmres(20)", ... or "cg": the method with its parameter */
static void method_name(const sap_krylov_options *kopt, char *buf, size_t len)
{
    if (kopt->type == SAP_KRYLOV_IR) { /* the parameter names the inner method (id + 1) */
        snprintf(buf, len, "ir(%s)",
                 sap_krylov_name(kopt->param ? (sap_krylov_type)(kopt->param - 1) : SAP_KRYLOV_GMRES));
    } else if (kopt->type == SAP_KRYLOV_ASYNC_JACOBI) {
        snprintf(buf, len, "async-jacobi(%d)", kopt->param ? kopt->param : 2);
    } else if (kopt->param || kopt->type == SAP_KRYLOV_BICGSTABL || kopt->type == SAP_KRYLOV_GMRES ||
        kopt->type == SAP_KRYLOV_FGMRES || kopt->type == SAP_KRYLOV_IDR) {
        int param = kopt->param;
        if (!param)
            param = kopt->type == SAP_KRYLOV_BICGSTABL ? 2
                    : kopt->type == SAP_KRYLOV_GMRES   ? 20
                    : kopt->type == SAP_KRYLOV_FGMRES  ? 30
                                                       : 4;
        snprintf(buf, len, "%s(%d)", sap_krylov_name(kopt->type), param);
    } else {
        snprintf(buf, len, "%s", sap_krylov_name(kopt->type));
    }
}

/* The half-bandwidth max |i - j| over the entries of A. */
static sap_int half_bandwidth(const sap_csr *A)
{
    sap_int K = 0;
    for (sap_int i = 0; i < A->nrows; i++)
        for (sap_int q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
            const sap_int d = A->colind[q] > i ? A->colind[q] - i : i - A->colind[q];
            if (d > K) K = d;
        }
    return K;
}

/* An integer option of the preconditioner (0 when "auto" or absent). */
static sap_int pc_int_option(const sap_precond *P, const char *name)
{
    char buf[64];
    if (sap_precond_get_option(P, name, buf, sizeof(buf)) != SAP_OK) return 0;
    return (sap_int)strtoll(buf, NULL, 10);
}

/* Before the numeric setup of a banded SaP preconditioner: its band factorization (of A as
 * it is: this path does not reorder) is predicted by sap_band_estimate_seconds; a long one is
 * announced on stderr (also under --quiet: a factorization cannot be interrupted), one
 * above SAP_SOLVE_REFUSE is refused without --force.  0 go on, 1 refused. */
static int check_band_cost(const solve_args *a, sap_context *ctx, const sap_csr *A, const sap_precond *P)
{
    const char *name = sap_precond_name(P);
    if (strcmp(name, "sap") && strcmp(name, "sap-d") && strcmp(name, "sap-c")) return 0;
    const sap_int n = A->nrows;
    sap_int K = half_bandwidth(A);
    const sap_int Kopt = pc_int_option(P, "half_bandwidth");
    if (Kopt > 0 && Kopt < K) K = Kopt;
    const double sec = sap_band_estimate_seconds(ctx, n, K, pc_int_option(P, "partitions"), a->pprec);
    if (sec <= SAP_SOLVE_LONG_STEP) return 0;
    char t[32];
    solve_fmt_seconds(sec, t, sizeof(t));
    const double es = a->pprec == SAP_FLOAT ? 4.0 : 8.0;
    fprintf(stderr,
            "sap solve: long step: %s preconditioner setup predicted to take ~%s (band factorization of N = %lld, "
            "K = %lld, %s: %.2g flop, %.2g GB on %s); why: --precond factors the band of the matrix as given (this "
            "path does not reorder); it cannot be interrupted before it ends.  The SaP pipeline (sap solve without "
            "--krylov/--precond) reorders first (DB + CM); --pc-opt half_bandwidth=K narrows the band\n",
            name, t, (long long)n, (long long)K, a->pprec == SAP_FLOAT ? "float" : "double",
            2.0 * (double)n * (double)K * (double)K, (double)n * (2.0 * (double)K + 1.0) * es / 1e9,
            sap_context_device_name(ctx));
    if (sec > SAP_SOLVE_REFUSE && !a->force) {
        fprintf(stderr, "sap solve: refused: %s preconditioner setup predicted to take ~%s (over %.0f min); --force "
                        "runs it anyway\n",
                name, t, SAP_SOLVE_REFUSE / 60);
        return 1;
    }
    return 0;
}

int solve_krylov(const solve_args *a, const solve_problem *p, solve_krylov_run *run)
{
    memset(run, 0, sizeof(*run));
    sap_context *ctx = p->ctx;
    const sap_csr *A = p->A;
    solve_outcome *out = &run->out;
    const sap_int n = A->nrows;
    const double *b = p->b, *xs = p->xs;
    out->k = 1;
    out->X = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    double *r = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int rc = 1;
    if (!out->X || !r) {
        fprintf(stderr, "sap solve: out of memory\n");
        goto done;
    }

    double t0 = solve_now();
    sap_status st = sap_matrix_create(ctx, A, &a->mopt, &run->M);
    run->t_matrix = solve_now() - t0;
    if (st < 0) goto fail;
    t0 = solve_now();
    st = sap_precond_create(ctx, a->precond, &run->P);
    if (st >= 0) st = sap_precond_set_precision(run->P, a->pprec);
    /* the type's own options: --partitions P is --pc-opt partitions=P */
    if (st >= 0 && a->partitions_given) {
        char v[32];
        snprintf(v, sizeof(v), "%lld", (long long)a->partitions);
        st = sap_precond_set_option(run->P, "partitions", v);
    }
    for (int i = 0; i < a->npc_opts && st >= 0; i++) st = sap_precond_set_options(run->P, a->pc_opts[i]);
    if (st >= 0) st = sap_precond_setup_symbolic(run->P, A);
    if (st >= 0 && check_band_cost(a, ctx, A, run->P)) goto done;
    if (st >= 0) st = sap_precond_setup_numeric(run->P, A);
    run->t_precond = solve_now() - t0;
    if (st < 0) goto fail;

    sap_krylov_options kopt = a->kopt;
    method_name(&kopt, run->method, sizeof(run->method));
    run->progress = (solve_progress){isatty(fileno(stderr)) && !a->common.quiet, 0.0, run->method, 0, a->force, "", 0.0};
    kopt.monitor = solve_progress_monitor;
    kopt.monitor_state = &run->progress;
    st = sap_krylov_create(ctx, &kopt, &run->K);
    if (st < 0) goto fail;
    sap_context_reset_transfer_stats(ctx);
    t0 = solve_now();
    st = sap_krylov_solve(run->K, run->M, run->P, b, out->X, &run->ks);
    run->t_solve = solve_now() - t0;
    solve_progress_clear(&run->progress);
    out->status = st;
    if (st != SAP_OK) snprintf(out->message, sizeof(out->message), "%s", sap_context_last_error(ctx));
    if (st < 0 && st != SAP_ERR_BREAKDOWN) goto fail;
    sap_context_get_stats(ctx, &out->transfers);

    /* true residual and error on the host, in double */
    double bn = 0, rn = 0, en = 0, xn = 0;
    const double *x = out->X;
    sap_csr_spmv(A, 1.0, x, 0.0, r);
    for (sap_int i = 0; i < n; i++) {
        bn += b[i] * b[i];
        rn += (b[i] - r[i]) * (b[i] - r[i]);
        if (xs) {
            en += (x[i] - xs[i]) * (x[i] - xs[i]);
            xn += xs[i] * xs[i];
        }
    }
    out->residual = bn > 0 ? sqrt(rn / bn) : sqrt(rn);
    out->error = xs ? (xn > 0 ? sqrt(en / xn) : sqrt(en)) : NAN;
    run->side = kopt.type == SAP_KRYLOV_CG       ? "symmetric"
                : kopt.type == SAP_KRYLOV_FGMRES ? "right"
                                                 : a->side;
    if (!strcmp(sap_precond_name(run->P), "none")) run->side = "-";
    rc = 0;
    goto done;
fail:
    rc = sap_tool_fail("solve", ctx, st);
done:
    free(r);
    return rc;
}

void solve_krylov_free(solve_krylov_run *run)
{
    free(run->out.X);
    sap_krylov_destroy(run->K);
    sap_precond_destroy(run->P);
    sap_matrix_destroy(run->M);
    memset(run, 0, sizeof(*run));
}
