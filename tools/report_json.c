/* report_json.c -- owns the JSON report of `sap solve --report F.json`: one cJSON document
 * per path (the SaP pipeline's profile and methods tried; the Krylov path's summary and
 * residual history), with the same keys as the text summary.  Printed by json_out.c. */
#include "json_out.h"
#include "solve.h"

#include <stddef.h>

typedef struct named_time {
    const char *name;
    double t;
} named_time;

/* "time": {name: seconds rounded to 1e-6, ...} */
static void add_times(cJSON *o, const named_time *t, size_t n)
{
    cJSON *tm = cJSON_AddObjectToObject(o, "time");
    for (size_t i = 0; i < n; i++) cJSON_AddNumberToObject(tm, t[i].name, sap_tool_json_fixed(t[i].t, 6));
}

static void add_transfers(cJSON *o, const sap_context_stats *cs)
{
    cJSON *t = cJSON_AddObjectToObject(o, "transfers");
    cJSON_AddNumberToObject(t, "h2d_bytes", (double)cs->h2d_bytes);
    cJSON_AddNumberToObject(t, "d2h_bytes", (double)cs->d2h_bytes);
    cJSON_AddNumberToObject(t, "h2d_copies", (double)cs->h2d_copies);
    cJSON_AddNumberToObject(t, "d2h_copies", (double)cs->d2h_copies);
}

/* "status", "status_code", "message", "converged" */
static void add_status(cJSON *o, const solve_outcome *out)
{
    cJSON_AddStringToObject(o, "status", sap_status_name(out->status));
    cJSON_AddNumberToObject(o, "status_code", (double)out->status);
    cJSON_AddStringToObject(o, "message", out->message);
    cJSON_AddBoolToObject(o, "converged", out->status == SAP_OK);
}

static int write_doc(const solve_args *a, cJSON *o)
{
    int rc = sap_tool_json_write(a->report, o, SAP_JSON_PRETTY);
    cJSON_Delete(o);
    return rc;
}

int solve_report_json_sparse(const solve_args *a, const solve_problem *p, const solve_sparse_run *r)
{
    const sap_solver_stats *ss = &r->ss;
    sap_context *ctx = p->ctx;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "matrix", a->input);
    cJSON_AddNumberToObject(o, "nrows", (double)p->A->nrows);
    cJSON_AddNumberToObject(o, "nnz", (double)p->A->nnz);
    cJSON_AddNumberToObject(o, "nrhs", (double)r->out.k);
    cJSON_AddTrueToObject(o, "pipeline");
    cJSON_AddStringToObject(o, "backend", sap_backend_name(sap_context_backend(ctx)));
    cJSON_AddStringToObject(o, "device", sap_context_device_name(ctx));
    cJSON_AddBoolToObject(o, "on_host", ss->on_host);
    cJSON_AddStringToObject(o, "method", sap_solver_method_name(ss->method));
    cJSON_AddStringToObject(o, "reason", ss->reason);
    cJSON *tried = cJSON_AddArrayToObject(o, "tried");
    for (int i = 0; i < ss->ntries; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "method", sap_solver_method_name(ss->tried[i].method));
        cJSON_AddStringToObject(t, "status", sap_status_name(ss->tried[i].status));
        cJSON_AddNumberToObject(t, "partitions", (double)ss->tried[i].partitions);
        cJSON_AddNumberToObject(t, "half_bandwidth", (double)ss->tried[i].half_bandwidth);
        cJSON_AddNumberToObject(t, "iterations", ss->tried[i].iterations);
        cJSON_AddNumberToObject(t, "time", ss->tried[i].time);
        cJSON_AddNumberToObject(t, "predicted_time", ss->tried[i].predicted);
        cJSON_AddNumberToObject(t, "time_budget", ss->tried[i].budget);
        cJSON_AddStringToObject(t, "note", ss->tried[i].note);
        cJSON_AddItemToArray(tried, t);
    }
    cJSON_AddBoolToObject(o, "spd", ss->spd);
    cJSON_AddBoolToObject(o, "db", ss->db_used);
    cJSON_AddBoolToObject(o, "scaled", ss->scaled);
    cJSON_AddBoolToObject(o, "cm", ss->cm_used);
    cJSON_AddBoolToObject(o, "third_stage", ss->third_stage_used);
    cJSON_AddNumberToObject(o, "K_original", (double)ss->K_original);
    cJSON_AddNumberToObject(o, "K_cm", (double)ss->K_cm);
    cJSON_AddNumberToObject(o, "K_drop", (double)ss->K_drop);
    cJSON_AddNumberToObject(o, "K_max", (double)ss->K_max);
    cJSON_AddNumberToObject(o, "kept_fraction", ss->kept_fraction);
    cJSON_AddNumberToObject(o, "partitions", (double)ss->partitions);
    cJSON_AddStringToObject(o, "precision", ss->factor_precision == SAP_FLOAT ? "float" : "double");
    cJSON_AddStringToObject(o, "krylov", sap_krylov_name(ss->krylov_type));
    cJSON_AddNumberToObject(o, "boosted_pivots", (double)ss->boosted_pivots);
    cJSON_AddNumberToObject(o, "dropped_entries", (double)ss->dropped_entries);
    cJSON_AddNumberToObject(o, "memory_estimate", (double)ss->memory_estimate);
    cJSON_AddNumberToObject(o, "tol", a->sopt.krylov.tol);
    cJSON_AddNumberToObject(o, "maxit", (double)a->sopt.krylov.maxit);
    add_status(o, &r->out);
    cJSON_AddNumberToObject(o, "iterations", ss->iterations);
    cJSON_AddNumberToObject(o, "true_residual", r->out.residual);
    cJSON_AddNumberToObject(o, "error", r->out.error);
    const named_time times[] = {{"T_create", ss->time_create}, {"T_stats", ss->time_stats},
                                {"T_probe", ss->time_probe}, {"T_structure", ss->time_structure},
                                {"T_analysis", ss->time_analysis},
                                {"T_DB", ss->time_db},       {"T_CM", ss->time_cm},
                                {"T_Drop", ss->time_drop},   {"T_third", ss->time_third},
                                {"T_Dtransf", ss->time_transfer}, {"T_Asmbl", ss->time_asmbl},
                                {"T_LU", ss->time_lu},       {"T_SPK", ss->time_spk},
                                {"T_LUrdcd", ss->time_lurdcd}, {"T_Kry", ss->time_kry},
                                {"T_refine", ss->time_refine},
                                {"load", p->t_load},         {"setup", r->t_setup},
                                {"solve", r->t_solve},       {"total", r->t_total}};
    add_times(o, times, sizeof(times) / sizeof(times[0]));
    add_transfers(o, &r->out.transfers);
    return write_doc(a, o);
}

int solve_report_json_krylov(const solve_args *a, const solve_problem *p, const solve_krylov_run *r)
{
    const sap_krylov_stats *ks = &r->ks;
    sap_context *ctx = p->ctx;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "matrix", a->input);
    cJSON_AddNumberToObject(o, "nrows", (double)p->A->nrows);
    cJSON_AddNumberToObject(o, "nnz", (double)p->A->nnz);
    cJSON_AddStringToObject(o, "rhs", a->rhs ? a->rhs : a->common.xstar_name);
    cJSON_AddBoolToObject(o, "manufactured", p->xs != NULL);
    cJSON_AddStringToObject(o, "backend", sap_backend_name(sap_context_backend(ctx)));
    cJSON_AddStringToObject(o, "device", sap_context_device_name(ctx));
    cJSON_AddStringToObject(o, "backend_reason", p->backend_why);
    cJSON_AddNumberToObject(o, "threads", sap_context_threads(ctx));
    cJSON_AddStringToObject(o, "method", r->method);
    cJSON_AddStringToObject(o, "precond", sap_precond_name(r->P));
    cJSON_AddStringToObject(o, "precond_precision", a->pprec == SAP_FLOAT ? "float" : "double");
    cJSON_AddStringToObject(o, "side", r->side);
    cJSON_AddStringToObject(o, "format", sap_spmv_format_name(sap_matrix_format(r->M)));
    cJSON_AddStringToObject(o, "format_reason", sap_matrix_format_reason(r->M));
    cJSON_AddNumberToObject(o, "tol", a->kopt.tol);
    cJSON_AddNumberToObject(o, "maxit", (double)a->kopt.maxit);
    add_status(o, &r->out);
    cJSON_AddNumberToObject(o, "iterations", ks->iterations);
    cJSON_AddNumberToObject(o, "relative_residual", ks->relative_residual);
    cJSON_AddNumberToObject(o, "true_residual", r->out.residual);
    cJSON_AddNumberToObject(o, "error", r->out.error);
    cJSON_AddNumberToObject(o, "spmv_count", (double)ks->spmv_count);
    cJSON_AddNumberToObject(o, "precond_count", (double)ks->precond_count);
    const named_time times[] = {{"load", p->t_load},          {"matrix", r->t_matrix},
                                {"precond_setup", r->t_precond}, {"solve", r->t_solve},
                                {"solve_setup", ks->time_setup}, {"spmv", ks->time_spmv},
                                {"precond", ks->time_precond}, {"vector", ks->time_vector}};
    add_times(o, times, sizeof(times) / sizeof(times[0]));
    add_transfers(o, &r->out.transfers);
    cJSON *hist = cJSON_AddArrayToObject(o, "history");
    for (sap_int i = 0; i < ks->history_length; i++) cJSON_AddItemToArray(hist, cJSON_CreateNumber(ks->history[i]));
    return write_doc(a, o);
}
