/* cmd_solve.c -- `sap solve FILE|SPEC`: runs the steps of the command in order (command line,
 * system, one of the two solve paths, summary, JSON report, -o) and owns its exit code.
 * Without --rhs the system is manufactured: b = A x*.  The steps live in the files that
 * solve.h lists.
 *
 * Exit codes: 0 converged (true residual <= tol), 1 error (bad input, out of memory,
 * NaN/Inf breakdown, a step predicted over an hour refused without --force, ...), 2 usage
 * error, 3 not converged (iteration limit, stagnation or breakdown: x is the best iterate
 * and is still written with -o), 130 stopped by SIGINT (likewise: the best x so far, its
 * residual printed even under --quiet, written with -o). */
#include "sap_tool.h"
#include "solve.h"

#include <stdio.h>
#include <string.h>

/* Writes the n x k solution as a Matrix Market array.  0, or the exit code 1. */
static int write_solution(sap_context *ctx, const char *path, const double *X, sap_int n, sap_int k)
{
    sap_dense *Xd = NULL;
    sap_status st = sap_dense_create(ctx, n, k, &Xd);
    if (st >= 0) {
        for (sap_int j = 0; j < k; j++)
            if (n > 0) memcpy(Xd->val + j * Xd->ld, X + j * n, sizeof(double) * (size_t)n);
        sap_mm_write_options wo;
        sap_mm_write_options_init(&wo);
        wo.format = SAP_MM_ARRAY;
        st = sap_mm_write_dense(Xd, path, &wo);
        sap_dense_destroy(Xd);
    }
    return st < 0 ? sap_tool_fail("solve", ctx, st) : 0;
}

/* The exit code of a finished solve (after the summary and the report). */
static int finish(const solve_args *a, const solve_outcome *o)
{
    if (o->status < 0) { /* NaN/Inf breakdown: an error, reported after the summary */
        fprintf(stderr, "sap solve: %s: %s\n", sap_status_string(o->status), o->message);
        return 1;
    }
    if (o->status == SAP_OK) return 0;
    if (o->status == SAP_WARN_INTERRUPTED) { /* also under --quiet: the user asked */
        fprintf(stderr,
                "sap solve: interrupted: %s\n"
                "sap solve: best x so far: true residual %.3e (||b - A x|| / ||b||)%s%s\n",
                o->message, o->residual, a->common.output ? ", written to " : "",
                a->common.output ? a->common.output : "");
        return SAP_SOLVE_INTERRUPTED;
    }
    if (!a->common.quiet) fprintf(stderr, "sap solve: not converged: %s\n", o->message);
    return SAP_SOLVE_NOT_CONVERGED;
}

int sap_cmd_solve(int argc, char **argv)
{
    solve_args a;
    int rc = solve_parse_args(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;

    solve_problem p;
    solve_sparse_run sr;
    solve_krylov_run kr;
    memset(&sr, 0, sizeof(sr));
    memset(&kr, 0, sizeof(kr));
    rc = solve_problem_load(&a, &p);
    if (rc) goto out;
    solve_interrupt_install(); /* SIGINT: the best x so far (solve_progress.c) */
    rc = a.pipeline ? solve_sparse(&a, &p, &sr) : solve_krylov(&a, &p, &kr);
    solve_interrupt_restore();
    if (rc) goto out;
    const solve_outcome *o = a.pipeline ? &sr.out : &kr.out;
    if (!a.common.quiet && !a.common.json) {
        if (a.pipeline) solve_report_text_sparse(&a, &p, &sr);
        else solve_report_text_krylov(&a, &p, &kr);
    }
    if (a.report && (a.pipeline ? solve_report_json_sparse(&a, &p, &sr) : solve_report_json_krylov(&a, &p, &kr))) {
        fprintf(stderr, "sap solve: cannot write the report '%s'\n", a.report);
        rc = 1;
        goto out;
    }
    if (a.common.json) { /* the report's JSON on stdout */
        const char *report = a.report;
        a.report = "-";
        int e = a.pipeline ? solve_report_json_sparse(&a, &p, &sr) : solve_report_json_krylov(&a, &p, &kr);
        a.report = report;
        if (e) {
            fprintf(stderr, "sap solve: cannot print the JSON report\n");
            rc = 1;
            goto out;
        }
    }
    if (a.common.output && (rc = write_solution(p.ctx, a.common.output, o->X, p.A->nrows, o->k))) goto out;
    rc = finish(&a, o);
out:
    solve_sparse_free(&sr);
    solve_krylov_free(&kr);
    solve_problem_free(&p);
    return rc;
}
