/* suite_sap.c -- sap in bench/suite: the sparse SaP pipeline (sap_solver_*) with the
 * default options (every choice automatic) on a cuda context when a GPU is present,
 * else on the cpu.  Timed: sap_solver_create (copies the CSR) + setup (sap_solver_setup_rhs:
 * the plan's probe solves this b) + solve, x on the
 * host.  Excluded: sap_context_create (CUDA initialisation), the warm-up (warm_methods) and
 * copying the suite's arrays into a sap_csr (the host CSR the solver starts from). */
#define _POSIX_C_SOURCE 200809L
#include "suite_anchor.h"

#include "sap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The warm-up (bench/suite.c: a 64-row tridiagonal system, its time excluded as the anchors'
 * first calls are): on a cuda context each GPU path the strategy can take runs once on it, with
 * host_small off (so small a system would stay on the host), so that the measured solve pays no
 * one-time cost the anchors' warm-ups took off theirs (lazy loading of the kernels' modules,
 * cuDSS's first handle and kernels, the cost model's rates of the device).  method: only that
 * one (a forced column). */
static void warm_methods(sap_context *ctx, const sap_csr *A, const double *b, const char *method)
{
    static const char *all[] = {"auto", "sap-d", "sap-c", "band-lu", "band-pivot", "ilu",
                                "bjacobi", "jacobi", "direct-cudss", "direct-host"};
    if (sap_context_backend(ctx) != SAP_BACKEND_CUDA) return;
    /* SAP_SUITE_WARM=m1,m2,...: only these (experiments on what the warm-up leaves behind) */
    const char *only = getenv("SAP_SUITE_WARM");
    double *x = calloc((size_t)A->nrows, sizeof(double));
    if (!x) return;
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        const int auto_m = strcmp(all[i], "auto") == 0;
        if (method ? strcmp(method, all[i]) != 0 : 0) continue;
        if (!method && only && only[0]) {
            const size_t l = strlen(all[i]);
            const char *f = strstr(only, all[i]);
            while (f && !((f == only || f[-1] == ',') && (f[l] == '\0' || f[l] == ','))) f = strstr(f + 1, all[i]);
            if (!f) continue;
        }
        sap_solver_options so;
        sap_solver_options_init(&so);
        if (!auto_m) { /* auto: the plan's rates measured on the device (or read from their file) */
            sap_solver_options_set(&so, "method", all[i]);
            sap_solver_options_set(&so, "fallback", "0");
        }
        sap_solver_options_set(&so, "host_small", "0");
        sap_solver *S = NULL;
        memset(x, 0, sizeof(double) * (size_t)A->nrows);
        if (sap_solver_create(ctx, A, &so, &S) == SAP_OK && sap_solver_setup_rhs(S, b) >= 0) (void)sap_solver_solve(S, b, x);
        sap_solver_destroy(S);
        sap_context_clear_error(ctx); /* a method that does not apply to the warm-up system */
    }
    free(x);
}

/* SAP_SUITE_SAP_TRACE=1: the setup's and the probe's part times (sap's INFO lines) go to
 * the child's stdout (suite_children.log), for finding where a system's time goes */
static void trace_log(void *state, int level, const char *message)
{
    (void)state;
    if (level == SAP_PRINT_INFO && (strncmp(message, "sap_solver: setup parts", 23) == 0 ||
                                    strncmp(message, "sap_solver: probe ", 18) == 0 ||
                                    strncmp(message, "sap_solver: late CM", 19) == 0))
        printf("sap-trace: %s\n", message);
}

/* the process' thread count and allowed CPUs (/proc/self/status), for the trace */
static void trace_proc(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256], out[256] = "";
    size_t len = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Threads:", 8) || !strncmp(line, "Cpus_allowed_list:", 18)) {
            line[strcspn(line, "\n")] = '\0';
            int w = snprintf(out + len, sizeof out - len, "%s%s", len ? "; " : "", line);
            if (w > 0 && (size_t)w < sizeof out - len) len += (size_t)w;
        }
    fclose(f);
    printf("sap-trace: process %s\n", out);
}

/* method NULL: every choice automatic; else that method forced without fallback */
static int run_sap(const suite_problem *p, double *x, suite_run *r, const char *method)
{
#ifndef SAP_SUITE_HAVE_SAP_SOLVER
    (void)p;
    (void)x;
    (void)method;
    suite_note(r, "sap_solver_* not built (src/solver missing at configure time)");
    return SUITE_RUN_NA;
#else
    double t0 = suite_now();
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = SAP_BACKEND_AUTO;
    cfg.print_level = SAP_PRINT_ERRORS;
    const char *be = getenv("SAP_SUITE_SAP_BACKEND"); /* cpu|cuda|auto, for experiments */
    if (be && sap_backend_parse(be, &cfg.backend) != SAP_OK) cfg.backend = SAP_BACKEND_AUTO;
    const char *th = getenv("SAP_SUITE_SAP_THREADS"); /* the context's host threads, for experiments */
    if (th && atoi(th) > 0) cfg.threads = atoi(th);
    const char *tr = getenv("SAP_SUITE_SAP_TRACE");
    if (tr && tr[0] && strcmp(tr, "0") != 0) {
        cfg.print_level = SAP_PRINT_INFO;
        cfg.log = trace_log;
    }
    sap_context *ctx = NULL;
    sap_status s = sap_context_create(&ctx, &cfg);
    r->init_s = suite_now() - t0;
    if (s != SAP_OK) {
        suite_note(r, "sap_context_create: %s", sap_status_name(s));
        return s == SAP_ERR_OUT_OF_MEMORY ? SUITE_RUN_OOM : SUITE_RUN_FAILED;
    }
    suite_note(r, "backend=%s", sap_backend_name(sap_context_backend(ctx)));

    sap_csr *A = NULL;
    s = sap_csr_create(ctx, p->n, p->n, p->nnz, &A);
    if (s != SAP_OK) {
        suite_note(r, "sap_csr_create: %s", sap_status_name(s));
        sap_context_destroy(ctx);
        return s == SAP_ERR_OUT_OF_MEMORY ? SUITE_RUN_OOM : SUITE_RUN_FAILED;
    }
    memcpy(A->rowptr, p->rowptr, sizeof(sap_int) * (size_t)(p->n + 1));
    memcpy(A->colind, p->colind, sizeof(sap_int) * (size_t)p->nnz);
    memcpy(A->val, p->val, sizeof(double) * (size_t)p->nnz);
    memset(x, 0, sizeof(double) * (size_t)p->n);

    if (strcmp(p->name, "warm-up") == 0) warm_methods(ctx, A, p->b, method);

    sap_solver *S = NULL;
    double t1 = suite_now();
    sap_solver_options so;
    sap_solver_options_init(&so);
    if (method) {
        sap_solver_options_set(&so, "method", method);
        sap_solver_options_set(&so, "fallback", "0");
    }
    double tc = 0, ts = 0;
    s = sap_solver_create(ctx, A, &so, &S);
    if (s == SAP_OK) {
        tc = suite_now();
        sap_status s2 = sap_solver_setup_rhs(S, p->b);
        ts = suite_now();
        if (s2 >= 0) s2 = sap_solver_solve(S, p->b, x);
        s = s2;
    }
    r->time_s = suite_now() - t1;
    if (cfg.log) {
        trace_proc();
        printf("sap-trace: %s %s %.3f ms: create %.3f, setup %.3f, solve %.3f\n", p->name, method ? method : "auto",
               1e3 * r->time_s, tc > 0 ? 1e3 * (tc - t1) : 0.0, ts > 0 ? 1e3 * (ts - tc) : 0.0,
               ts > 0 ? 1e3 * (t1 + r->time_s - ts) : 0.0);
        fflush(stdout);
    }

    int rc = SUITE_RUN_DONE;
    if (s < 0) {
        const char *msg = sap_context_last_error(ctx);
        suite_note(r, "%s: %.160s", sap_status_name(s), msg ? msg : "");
        rc = s == SAP_ERR_OUT_OF_MEMORY ? SUITE_RUN_OOM : SUITE_RUN_FAILED;
    } else if (s > 0) {
        suite_note(r, "%s", sap_status_name(s));
    }
    if (S) {
        sap_solver_stats st;
        memset(&st, 0, sizeof st);
        if (sap_solver_get_stats(S, &st) == SAP_OK) {
            suite_note(r, "method=%s P=%lld K=%lld it=%.4g host=%d", sap_solver_method_name(st.method),
                       (long long)st.partitions, (long long)st.K_max, st.iterations, st.on_host);
            char tries[400];
            size_t len = 0;
            tries[0] = '\0';
            for (int i = 0; i < st.ntries && i < SAP_SOLVER_MAX_TRIES && len + 80 < sizeof tries; i++) {
                const sap_solver_try *t = &st.tried[i];
                /* method:status(time, predicted setup (direct: whole solve), budget) */
                char box[48] = "";
                if (t->budget > 0) snprintf(box, sizeof box, ",pred %.2g,budget %.2g", t->predicted, t->budget);
                else if (t->predicted > 0) snprintf(box, sizeof box, ",pred %.2g", t->predicted);
                int w = snprintf(tries + len, sizeof tries - len, "%s%s:%s(%.3gs%s)", i ? ">" : "",
                                 sap_solver_method_name(t->method), sap_status_name(t->status), t->time, box);
                if (w > 0) len += (size_t)w;
                if (len >= sizeof tries) len = sizeof tries - 1;
            }
            suite_note(r, "tries=%s", tries);
            /* where the time went (the profile's T_ entries, ms) */
            suite_note(r,
                       "prof=create %.3g, stats %.3g (probe %.3g, structure %.3g, analysis %.3g), db %.3g, cm %.3g, "
                       "drop %.3g, transf %.3g, asmbl %.3g, lu %.3g, kry %.3g, refine %.3g",
                       1e3 * st.time_create, 1e3 * st.time_stats, 1e3 * st.time_probe, 1e3 * st.time_structure,
                       1e3 * st.time_analysis, 1e3 * st.time_db, 1e3 * st.time_cm, 1e3 * (st.time_drop + st.time_third),
                       1e3 * st.time_transfer, 1e3 * st.time_asmbl, 1e3 * st.time_lu, 1e3 * st.time_kry,
                       1e3 * st.time_refine);
            suite_note(r, "reason=%.120s", st.reason);
        }
    }
    sap_solver_destroy(S);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return rc;
#endif
}

int suite_run_sap(const suite_problem *p, double *x, suite_run *r) { return run_sap(p, x, r, NULL); }
int suite_run_sap_direct_host(const suite_problem *p, double *x, suite_run *r)
{
    return run_sap(p, x, r, "direct-host");
}
int suite_run_sap_direct_cudss(const suite_problem *p, double *x, suite_run *r)
{
    return run_sap(p, x, r, "direct-cudss");
}
int suite_run_sap_sapd(const suite_problem *p, double *x, suite_run *r) { return run_sap(p, x, r, "sap-d"); }
int suite_run_sap_sapc(const suite_problem *p, double *x, suite_run *r) { return run_sap(p, x, r, "sap-c"); }
int suite_run_sap_band_lu(const suite_problem *p, double *x, suite_run *r) { return run_sap(p, x, r, "band-lu"); }
int suite_run_sap_ilu(const suite_problem *p, double *x, suite_run *r) { return run_sap(p, x, r, "ilu"); }
int suite_run_sap_bjacobi(const suite_problem *p, double *x, suite_run *r) { return run_sap(p, x, r, "bjacobi"); }
int suite_run_sap_jacobi(const suite_problem *p, double *x, suite_run *r) { return run_sap(p, x, r, "jacobi"); }
