/* report_text.c -- owns the summary that `sap solve` prints on stdout: the profile of the
 * SaP pipeline (method and why, every method tried, K after each stage, timings) and the
 * summary of the explicit Krylov path (method, preconditioner, SpMV format, iterations,
 * residuals, time per phase, transfers). */
#include "solve.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *rhs_text(const solve_args *a)
{
    if (a->rhs) return a->rhs;
    switch (a->common.xstar) {
    case SAP_XSTAR_PARABOLA: return "b = A x*, x* parabola";
    case SAP_XSTAR_RANDOM: return "b = A x*, x* random";
    default: return "b = A x*, x* ones";
    }
}

void solve_report_text_sparse(const solve_args *a, const solve_problem *p, const solve_sparse_run *r)
{
    const sap_solver_stats *ss = &r->ss;
    const solve_outcome *o = &r->out;
    const sap_solver_options *sopt = &a->sopt;
    sap_context *ctx = p->ctx;
    const sap_int n = p->A->nrows, k = o->k;
    printf("matrix        %s (%lld x %lld, %lld nonzeros)\n", a->input, (long long)n, (long long)n,
           (long long)p->A->nnz);
    printf("rhs           %s%s\n", rhs_text(a), k > 1 ? (a->rhs ? " (its columns)" : " (then random x*), solved together") : "");
    if (k > 1) printf("nrhs          %lld\n", (long long)k);
    printf("backend       %s, %s (%s)%s\n", sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx),
           p->backend_why, ss->on_host && sap_context_backend(ctx) == SAP_BACKEND_CUDA ? ", small system on the host" : "");
    if (ss->method == SAP_METHOD_AUTO) /* the setup was stopped before a method was built */
        printf("method        none (stopped before a method was built)\n");
    else
        printf("method        %s (%s)\n", sap_solver_method_name(ss->method),
               sopt->method == SAP_METHOD_AUTO ? "auto" : "given");
    printf("reason        %s\n", ss->reason);
    for (int i = 0; i < ss->ntries; i++) {
        /* the prediction and the time box, where there were any */
        char pb[64] = "";
        if (ss->tried[i].budget > 0)
            snprintf(pb, sizeof(pb), " (predicted %.3gs, budget %.3gs)", ss->tried[i].predicted, ss->tried[i].budget);
        else if (ss->tried[i].predicted > 0)
            snprintf(pb, sizeof(pb), " (predicted %.3gs)", ss->tried[i].predicted);
        printf("%s %d. %-10s %-24s %.3fs%s  %s\n", i == 0 ? "tried        " : "             ", i + 1,
               sap_solver_method_name(ss->tried[i].method), sap_status_name(ss->tried[i].status), ss->tried[i].time,
               pb, ss->tried[i].note);
    }
    printf("bandwidth     K_original %lld, K_cm %lld, K_drop %lld, K_max %lld (drop-off kept %.8g of ||A||_F^2)\n",
           (long long)ss->K_original, (long long)ss->K_cm, (long long)ss->K_drop, (long long)ss->K_max,
           ss->kept_fraction);
    printf("reorderings   DB %s%s, CM %s, third stage %s\n", ss->db_used ? "on" : "off", ss->scaled ? " + scaling" : "",
           ss->cm_used ? "on" : "off", ss->third_stage_used ? "on" : "off");
    printf("partitions    P = %lld, %s factors, %lld boosted pivots, %lld entries dropped\n", (long long)ss->partitions,
           ss->factor_precision == SAP_FLOAT ? "float" : "double", (long long)ss->boosted_pivots,
           (long long)ss->dropped_entries);
    printf("krylov        %s, tol %.3g, maxit %lld\n",
           ss->method == SAP_METHOD_BAND_PIVOT ? "none (refinement)" : sap_krylov_name(ss->krylov_type),
           sopt->krylov.tol, (long long)sopt->krylov.maxit);
    printf("memory        estimate %.4g MB\n", (double)ss->memory_estimate / 1e6);
    printf("status        %s: %s\n", sap_status_name(o->status), sap_status_string(o->status));
    if (o->message[0]) printf("message       %s\n", o->message);
    printf("iterations    %g\n", ss->iterations);
    printf("residual      %.3e (true ||b - A x|| / ||b||%s)\n", o->residual, k > 1 ? ", worst column" : "");
    if (p->xs) printf("error         %.3e (||x - x*|| / ||x*||%s)\n", o->error, k > 1 ? ", worst column" : "");
    printf("profile       T_create %.6f s, T_stats %.6f s, T_DB %.6f s, T_CM %.6f s, T_Drop %.6f s\n",
           ss->time_create, ss->time_stats, ss->time_db, ss->time_cm, ss->time_drop + ss->time_third);
    if (ss->time_probe > 0 || ss->time_structure > 0 || ss->time_analysis > 0)
        printf("              plan: probe %.6f s, structure %.6f s (in T_stats); direct analysis %.6f s\n",
               ss->time_probe, ss->time_structure, ss->time_analysis);
    if (p->probe_log[0]) printf("              %s\n", p->probe_log);
    if (p->setup_log[0]) printf("              %s\n", p->setup_log);
    if (p->db_log[0]) printf("              %s\n", p->db_log);
    printf("              T_Dtransf %.6f s, T_Asmbl %.6f s, T_LU %.6f s, T_SPK %.6f s, T_LUrdcd %.6f s\n",
           ss->time_transfer, ss->time_asmbl, ss->time_lu, ss->time_spk, ss->time_lurdcd);
    const double named = ss->time_create + ss->time_stats + ss->time_db + ss->time_cm + ss->time_drop +
                         ss->time_third + ss->time_transfer + ss->time_asmbl + ss->time_lu + ss->time_spk +
                         ss->time_lurdcd + ss->time_kry + ss->time_refine;
    const double wall = r->t_setup + r->t_solve;
    printf("              T_Kry %.6f s, T_refine %.6f s; unnamed %.6f s (%.1f%% of setup + solve named)\n",
           ss->time_kry, ss->time_refine, wall - named, wall > 0 ? 100.0 * named / wall : 100.0);
    printf("time          load %.4f s, setup %.4f s, solve %.4f s, total %.4f s\n", p->t_load, r->t_setup, r->t_solve,
           r->t_total);
}

void solve_report_text_krylov(const solve_args *a, const solve_problem *p, const solve_krylov_run *r)
{
    const sap_krylov_stats *ks = &r->ks;
    const solve_outcome *o = &r->out;
    const sap_context_stats *cs = &o->transfers;
    sap_context *ctx = p->ctx;
    const sap_int n = p->A->nrows;
    printf("matrix        %s (%lld x %lld, %lld nonzeros)\n", a->input, (long long)n, (long long)n,
           (long long)p->A->nnz);
    printf("rhs           %s\n", rhs_text(a));
    printf("backend       %s, %s (%s)\n", sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx),
           p->backend_why);
    printf("method        %s, tol %.3g, maxit %lld\n", r->method, a->kopt.tol, (long long)a->kopt.maxit);
    printf("precond       %s (%s, side %s)\n", sap_precond_name(r->P), a->pprec == SAP_FLOAT ? "float" : "double",
           r->side);
    /* the preconditioner's options and what its setup chose (profile), one line each */
    char prep[4096];
    if (sap_precond_report(r->P, 0, prep, sizeof(prep)) == SAP_OK) {
        const char *line = strchr(prep, '\n');
        while (line && line[1]) {
            const char *end = strchr(line + 1, '\n');
            printf("pc            %.*s\n", (int)(end ? end - line - 1 : (ptrdiff_t)strlen(line + 1)), line + 1);
            line = end;
        }
    }
    printf("spmv format   %s (%s)\n", sap_spmv_format_name(sap_matrix_format(r->M)), sap_matrix_format_reason(r->M));
    printf("status        %s: %s\n", sap_status_name(o->status), sap_status_string(o->status));
    if (o->message[0]) printf("message       %s\n", o->message);
    sap_band_stats bst;
    if (sap_precond_get_band_stats(r->P, &bst) == SAP_OK)
        printf("sap           %s, P = %lld, K = %lld, %lld boosted pivots (%s)\n"
               "sap timings   T_LU %.6f s, T_BC %.6f s, T_SPK %.6f s, T_LUrdcd %.6f s, T_Kry %.6f s\n",
               sap_band_method_name(bst.method), (long long)bst.partitions, (long long)bst.half_bandwidth,
               (long long)bst.boosted_pivots, bst.reason, bst.time_lu, bst.time_bc, bst.time_spk, bst.time_lurdcd,
               r->t_solve);
    {
        /* what the preconditioner's setup chose: the report's lines after the header and the
         * option values (name=value) */
        char rep[4096];
        if (sap_precond_report(r->P, 0, rep, sizeof(rep)) == SAP_OK) {
            const char *line = strchr(rep, '\n');
            while (line && *++line) {
                const size_t len = strcspn(line, "\n");
                if (!memchr(line, '=', len)) printf("pc report     %.*s\n", (int)len, line);
                line = strchr(line, '\n');
            }
        }
    }
    printf("iterations    %g (%lld SpMV, %lld preconditioner applications)\n", ks->iterations,
           (long long)ks->spmv_count, (long long)ks->precond_count);
    printf("residual      recursive %.3e, true %.3e (||b - A x|| / ||b||)\n", ks->relative_residual, o->residual);
    if (p->xs) printf("error         %.3e (||x - x*|| / ||x*||)\n", o->error);
    printf("time          load %.4f s, matrix %.4f s, preconditioner %.4f s, solve %.4f s\n", p->t_load, r->t_matrix,
           r->t_precond, r->t_solve);
    printf("solve phases  setup %.4f s, spmv %.4f s, preconditioner %.4f s, vector ops %.4f s\n", ks->time_setup,
           ks->time_spmv, ks->time_precond, ks->time_vector);
    printf("transfers     host->device %lld bytes (%lld copies), device->host %lld bytes (%lld copies)\n",
           (long long)cs->h2d_bytes, (long long)cs->h2d_copies, (long long)cs->d2h_bytes, (long long)cs->d2h_copies);
}
