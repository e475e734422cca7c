/* cmd_solve.c -- `sap solve FILE|SPEC`: solves A x = b with a Krylov method and a simple
 * preconditioner on the chosen backend, then prints a summary (and optionally writes x and
 * a JSON report).  Without --rhs the system is manufactured: b = A x*.
 *
 * Exit codes: 0 converged (true residual <= tol), 1 error (bad input, out of memory,
 * NaN/Inf breakdown, ...), 2 usage error, 3 not converged (iteration limit, stagnation or
 * breakdown: x is the best iterate and is still written with -o). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty, fileno under -std=c11 */
#include "json_out.h"
#include "sap_tool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_NOT_CONVERGED 3

static void usage(FILE *f)
{
    fprintf(f, "usage: sap solve FILE|SPEC [--method auto|sap-d|sap-c|band-lu|band-pivot|jacobi] [--opt NAME=VALUE]...\n"
               "                 [--nrhs K] [--profile]\n"
               "       sap solve FILE|SPEC [--rhs FILE] [--krylov METHOD] [--precond none|jacobi|sap-d|sap-c|auto]\n"
               "                 [--partitions P]\n"
               "                 [--precond-precision float|double] [--side left|right]\n"
               "                 [--format auto|csr|ell|sellp|hec] [--tol T] [--maxit N] [--stagnation N]\n"
               "                 [--backend cpu|cuda|auto] [--threads N] [--xstar parabola|random|ones]\n"
               "                 [-o X.mtx] [--report OUT.json] [--quiet]\n\n"
               "Without --precond and --krylov, solves A x = b with the sparse SaP pipeline (DB, CM,\n"
               "drop-off, partitions, SaP-D/SaP-C preconditioned BiCGStab(2) or CG, with automatic\n"
               "choices and a fallback chain) and prints its profile: the method and why, every\n"
               "method tried, K after each stage, P, precision, T_DB, T_CM, T_Drop, T_Dtransf,\n"
               "T_Asmbl, T_LU, T_SPK, T_LUrdcd, T_Kry.  With --precond, --krylov, --side, --format or\n"
               "--precond-precision, solves with that\n"
               "Krylov method and preconditioner and prints a summary: backend, method, SpMV format,\n"
               "iterations, relative residual (recursive and true), the error against x* when the\n"
               "system is manufactured, time per phase, bytes moved between host and device.\n\n"
               "  --method M        pipeline method: auto (default), sap-d, sap-c, band-lu, band-pivot,\n"
               "                    jacobi (a forced method still falls back unless --opt fallback=0)\n"
               "  --opt NAME=VALUE  pipeline option (repeatable), e.g. drop=0.999, db=none,\n"
               "                    precision=double, memory_limit=2G; --opt help lists them\n"
               "  --nrhs K          solve K manufactured right-hand sides at once (x*: the parabola,\n"
               "                    then random vectors)\n"
               "  --profile         accepted for compatibility: the pipeline always prints its profile\n"
               "  --rhs FILE        right-hand side (Matrix Market, first column); default b = A x*\n"
               "  --xstar KIND      manufactured solution: parabola (default; 1 at the ends, 400 in\n"
               "                    the middle), random (uniform in [-1, 1], seed 1) or ones\n"
               "  --krylov METHOD   cg | bicgstab | bicgstabl[:l] | gmres[:m] | fgmres[:m] | idr[:s]\n"
               "                    (default bicgstabl:2; BiCGStab(l) counts iterations in 1/(2l) steps)\n"
               "  --precond P       none (default), jacobi, or the banded SaP preconditioners sap-d\n"
               "                    (decoupled), sap-c (coupled) or auto (prints T_LU, T_BC, T_SPK,\n"
               "                    T_LUrdcd, T_Kry)\n"
               "  --partitions P    SaP partitions (default 0: automatic)\n"
               "  --precond-precision float|double   precision of the preconditioner (default double)\n"
               "  --side left|right preconditioning side (default right; cg is always symmetric,\n"
               "                    fgmres always right)\n"
               "  --format F        SpMV format (default auto: chosen by the backend)\n"
               "  --tol T           relative residual ||b - Ax|| / ||b|| to reach (default 1e-10)\n"
               "  --maxit N         iteration limit (default 1000)\n"
               "  --stagnation N    stop when the best residual did not drop by 1e-3 in N iterations\n"
               "  --backend B       cpu, cuda or auto (default auto: cuda when a GPU is present)\n"
               "  --threads N       CPU threads (default: all)\n"
               "  -o X.mtx          write the solution as a Matrix Market array\n"
               "  --report F.json   write the summary and the residual history as JSON\n"
               "  --quiet           no progress line and no summary (errors still go to stderr)\n\n"
               "Exit status: 0 converged, 1 error, 2 usage error, 3 not converged (iteration limit,\n"
               "stagnation or breakdown).\n");
}

/* ---- context with a log hook that keeps the backend choice message -------------------- */

typedef struct log_capture {
    char backend_msg[256];
} log_capture;

static void capture_log(void *state, int level, const char *message)
{
    log_capture *c = state;
    if (level == SAP_PRINT_INFO && strstr(message, "backend"))
        snprintf(c->backend_msg, sizeof(c->backend_msg), "%s", message);
}

/* ---- progress line ---------------------------------------------------------------------------- */

typedef struct progress {
    int live;
    double last;
    const char *method;
    int shown;
} progress;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int monitor(void *state, double iteration, double relres)
{
    progress *p = state;
    if (!p->live) return 0;
    double t = now();
    if (t - p->last < 0.1) return 0;
    p->last = t;
    p->shown = 1;
    fprintf(stderr, "\r%s: iteration %10.2f  relative residual %.3e ", p->method, iteration, relres);
    fflush(stderr);
    return 0;
}

static void progress_clear(progress *p)
{
    if (p->live && p->shown) fprintf(stderr, "\r%78s\r", "");
}

/* ---- JSON report parts ------------------------------------------------------------------------ */

static void add_transfers(cJSON *o, const sap_context_stats *cs)
{
    cJSON *t = cJSON_AddObjectToObject(o, "transfers");
    cJSON_AddNumberToObject(t, "h2d_bytes", (double)cs->h2d_bytes);
    cJSON_AddNumberToObject(t, "d2h_bytes", (double)cs->d2h_bytes);
    cJSON_AddNumberToObject(t, "h2d_copies", (double)cs->h2d_copies);
    cJSON_AddNumberToObject(t, "d2h_copies", (double)cs->d2h_copies);
}

/* ---- the command ---------------------------------------------------------------------------------- */

#define MAX_OPTS 32

typedef struct solve_args {
    const char *input, *rhs, *krylov, *precond, *pprec, *side, *format, *backend, *xstar, *out, *report;
    const char *method;
    const char *opts[MAX_OPTS];
    int nopts;
    int pipeline; /* neither --precond nor --krylov given */
    double tol;
    long long maxit, threads, stagnation, partitions, nrhs;
    int quiet;
} solve_args;

static int parse_double(const char *s, double *v)
{
    if (!s || !*s) return -1;
    char *end = NULL;
    *v = strtod(s, &end);
    return *end || !isfinite(*v) ? -1 : 0;
}

/* 0 ok, 1 --help printed, 2 usage error */
static int parse_args(int argc, char **argv, solve_args *a)
{
    memset(a, 0, sizeof(*a));
    a->krylov = "bicgstabl:2";
    a->precond = "none";
    a->pprec = "double";
    a->side = "right";
    a->format = "auto";
    a->backend = "auto";
    a->xstar = "parabola";
    a->tol = 1e-10;
    a->maxit = 1000;
    a->method = "auto";
    a->nrhs = 1;
    int explicit_path = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const int has = i + 1 < argc;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(o, "--quiet") || !strcmp(o, "-q")) {
            a->quiet = 1;
        } else if (!strcmp(o, "--profile")) {
            /* the pipeline prints its profile anyway */
        } else if (!strcmp(o, "--opt") && has && !strcmp(argv[i + 1], "help")) {
            fputs(sap_solver_options_help(), stdout);
            return 1;
        } else if (o[0] == '-' && o[1] && !has) {
            fprintf(stderr, "sap solve: unknown option or missing value '%s'\n", o);
            return 2;
        } else if (!strcmp(o, "--rhs")) a->rhs = argv[++i];
        else if (!strcmp(o, "--krylov")) {
            a->krylov = argv[++i];
            explicit_path = 1;
        } else if (!strcmp(o, "--precond")) {
            a->precond = argv[++i];
            explicit_path = 1;
        } else if (!strcmp(o, "--method")) a->method = argv[++i];
        else if (!strcmp(o, "--opt")) {
            if (a->nopts >= MAX_OPTS) {
                fprintf(stderr, "sap solve: at most %d --opt options\n", MAX_OPTS);
                return 2;
            }
            a->opts[a->nopts++] = argv[++i];
        }
        else if (!strcmp(o, "--precond-precision") || !strcmp(o, "--side") || !strcmp(o, "--format")) {
            /* options of the explicit Krylov + preconditioner path: they select it */
            explicit_path = 1;
            if (!strcmp(o, "--precond-precision")) a->pprec = argv[++i];
            else if (!strcmp(o, "--side")) a->side = argv[++i];
            else a->format = argv[++i];
        }
        else if (!strcmp(o, "--backend")) a->backend = argv[++i];
        else if (!strcmp(o, "--xstar")) a->xstar = argv[++i];
        else if (!strcmp(o, "-o")) a->out = argv[++i];
        else if (!strcmp(o, "--report")) a->report = argv[++i];
        else if (!strcmp(o, "--tol")) {
            if (parse_double(argv[++i], &a->tol) || a->tol < 0) {
                fprintf(stderr, "sap solve: --tol needs a number >= 0\n");
                return 2;
            }
        } else if (!strcmp(o, "--maxit") || !strcmp(o, "--threads") || !strcmp(o, "--stagnation") ||
                   !strcmp(o, "--partitions") || !strcmp(o, "--nrhs")) {
            long long v = 0;
            if (sap_tool_parse_int(argv[i + 1], &v)) {
                fprintf(stderr, "sap solve: %s needs a non-negative integer\n", o);
                return 2;
            }
            i++;
            if (!strcmp(o, "--maxit")) a->maxit = v;
            else if (!strcmp(o, "--threads")) a->threads = v;
            else if (!strcmp(o, "--partitions")) a->partitions = v;
            else if (!strcmp(o, "--nrhs")) a->nrhs = v;
            else a->stagnation = v;
        } else if (o[0] == '-' && o[1]) {
            fprintf(stderr, "sap solve: unknown option '%s'\n", o);
            return 2;
        } else if (!a->input) {
            a->input = o;
        } else {
            fprintf(stderr, "sap solve: more than one matrix given ('%s', '%s')\n", a->input, o);
            return 2;
        }
    }
    if (!a->input) {
        fprintf(stderr, "sap solve: no matrix given\nusage: sap solve FILE|SPEC [options] (sap solve --help)\n");
        return 2;
    }
    a->pipeline = !explicit_path;
    if (!a->pipeline && (a->nopts || strcmp(a->method, "auto") || a->nrhs != 1)) {
        fprintf(stderr, "sap solve: --method, --opt and --nrhs belong to the SaP pipeline (without --precond, "
                        "--krylov, --side, --format, --precond-precision)\n");
        return 2;
    }
    if (a->nrhs < 1) {
        fprintf(stderr, "sap solve: --nrhs needs K >= 1\n");
        return 2;
    }
    return 0;
}

/* ---- the SaP pipeline (sap_solver) ------------------------------------------------------------ */

static double vnorm(const double *v, sap_int n)
{
    double s = 0;
    for (sap_int i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

/* Solves with sap_solver: nrhs right-hand sides (column 0 is b; manufactured columns
 * 1.. from random x*), prints the profile, writes the report.  Returns the exit code. */
static int run_pipeline(const solve_args *a, sap_context *ctx, const sap_csr *A, const double *b0, const double *xs0,
                        sap_xstar xkind, const sap_solver_options *sopt, double t_load, const char *backend_why,
                        const sap_dense *Bfile)
{
    const sap_int n = A->nrows;
    sap_int k = (sap_int)a->nrhs;
    if (Bfile && k > Bfile->ncols) k = Bfile->ncols;
    const size_t nn = (size_t)(n > 0 ? n : 1) * (size_t)k;
    double *B = malloc(sizeof(double) * nn), *X = calloc(nn, sizeof(double));
    double *XS = xs0 ? malloc(sizeof(double) * nn) : NULL, *r = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    sap_solver *S = NULL;
    sap_solver_stats ss;
    memset(&ss, 0, sizeof(ss));
    int exit_code = 1;
    sap_status st = SAP_OK, setup_st = SAP_OK;
    char msg[1024] = "";
    if (!B || !X || !r || (xs0 && !XS)) {
        fprintf(stderr, "sap solve: out of memory\n");
        goto done;
    }
    for (sap_int j = 0; j < k; j++) {
        if (j == 0) {
            memcpy(B, b0, sizeof(double) * (size_t)n);
            if (XS) memcpy(XS, xs0, sizeof(double) * (size_t)n);
        } else if (Bfile) {
            memcpy(B + j * n, Bfile->val + j * Bfile->ld, sizeof(double) * (size_t)n);
        } else {
            sap_gen_xstar(ctx, n, SAP_XSTAR_RANDOM, 1 + (uint64_t)j, XS + j * n);
            sap_csr_spmv(A, 1.0, XS + j * n, 0.0, B + j * n);
        }
    }
    double t0 = now();
    st = sap_solver_create(ctx, A, sopt, &S);
    if (st >= 0) setup_st = st = sap_solver_setup(S);
    const double t_setup = now() - t0;
    if (st < 0) {
        sap_solver_get_stats(S, &ss);
        snprintf(msg, sizeof(msg), "%s", sap_context_last_error(ctx));
        fprintf(stderr, "sap solve: %s: %s\n", sap_status_name(st), msg);
        for (int i = 0; i < ss.ntries; i++)
            fprintf(stderr, "  tried %-10s %s: %s\n", sap_solver_method_name(ss.tried[i].method),
                    sap_status_name(ss.tried[i].status), ss.tried[i].note);
        goto done;
    }
    sap_context_reset_transfer_stats(ctx);
    t0 = now();
    st = sap_solver_solve_many(S, k, B, n, X, n);
    const double t_solve = now() - t0;
    if (st != SAP_OK) snprintf(msg, sizeof(msg), "%s", sap_context_last_error(ctx));
    sap_solver_get_stats(S, &ss);
    if (st < 0 && st != SAP_ERR_BREAKDOWN) {
        fprintf(stderr, "sap solve: %s: %s\n", sap_status_name(st), msg);
        goto done;
    }
    /* residuals and errors on the host, worst over the columns */
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
    sap_context_stats cs;
    sap_context_get_stats(ctx, &cs);
    const double t_total = t_load + t_setup + t_solve;
    if (!a->quiet) {
        printf("matrix        %s (%lld x %lld, %lld nonzeros)\n", a->input, (long long)n, (long long)n,
               (long long)A->nnz);
        printf("rhs           %s%s\n",
               a->rhs ? a->rhs
                      : (xkind == SAP_XSTAR_PARABOLA ? "b = A x*, x* parabola"
                         : xkind == SAP_XSTAR_RANDOM ? "b = A x*, x* random"
                                                     : "b = A x*, x* ones"),
               k > 1 ? (a->rhs ? " (its columns)" : " (then random x*), solved together") : "");
        if (k > 1) printf("nrhs          %lld\n", (long long)k);
        printf("backend       %s, %s (%s)%s\n", sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx),
               backend_why, ss.on_host && sap_context_backend(ctx) == SAP_BACKEND_CUDA ? ", small system on the host" : "");
        printf("method        %s (%s)\n", sap_solver_method_name(ss.method),
               sopt->method == SAP_METHOD_AUTO ? "auto" : "given");
        printf("reason        %s\n", ss.reason);
        for (int i = 0; i < ss.ntries; i++)
            printf("%s %d. %-10s %-24s %.3fs  %s\n", i == 0 ? "tried        " : "             ", i + 1,
                   sap_solver_method_name(ss.tried[i].method), sap_status_name(ss.tried[i].status), ss.tried[i].time,
                   ss.tried[i].note);
        printf("bandwidth     K_original %lld, K_cm %lld, K_drop %lld, K_max %lld (drop-off kept %.8g of ||A||_F^2)\n",
               (long long)ss.K_original, (long long)ss.K_cm, (long long)ss.K_drop, (long long)ss.K_max,
               ss.kept_fraction);
        printf("reorderings   DB %s%s, CM %s, third stage %s\n", ss.db_used ? "on" : "off",
               ss.scaled ? " + scaling" : "", ss.cm_used ? "on" : "off", ss.third_stage_used ? "on" : "off");
        printf("partitions    P = %lld, %s factors, %lld boosted pivots, %lld entries dropped\n",
               (long long)ss.partitions, ss.factor_precision == SAP_FLOAT ? "float" : "double",
               (long long)ss.boosted_pivots, (long long)ss.dropped_entries);
        printf("krylov        %s, tol %.3g, maxit %lld\n",
               ss.method == SAP_METHOD_BAND_PIVOT ? "none (refinement)" : sap_krylov_name(ss.krylov_type),
               sopt->krylov.tol, (long long)sopt->krylov.maxit);
        printf("memory        estimate %.4g MB\n", (double)ss.memory_estimate / 1e6);
        printf("status        %s: %s\n", sap_status_name(st), sap_status_string(st));
        if (msg[0]) printf("message       %s\n", msg);
        printf("iterations    %g\n", ss.iterations);
        printf("residual      %.3e (true ||b - A x|| / ||b||%s)\n", res, k > 1 ? ", worst column" : "");
        if (XS) printf("error         %.3e (||x - x*|| / ||x*||%s)\n", err, k > 1 ? ", worst column" : "");
        printf("profile       T_DB %.6f s, T_CM %.6f s, T_Drop %.6f s, T_Dtransf %.6f s, T_Asmbl %.6f s\n", ss.time_db,
               ss.time_cm, ss.time_drop + ss.time_third, ss.time_transfer, ss.time_asmbl);
        printf("              T_LU %.6f s, T_SPK %.6f s, T_LUrdcd %.6f s, T_Kry %.6f s\n", ss.time_lu, ss.time_spk,
               ss.time_lurdcd, ss.time_kry);
        printf("time          load %.4f s, setup %.4f s, solve %.4f s, total %.4f s\n", t_load, t_setup, t_solve,
               t_total);
    }
    if (a->report) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "matrix", a->input);
        cJSON_AddNumberToObject(o, "nrows", (double)n);
        cJSON_AddNumberToObject(o, "nnz", (double)A->nnz);
        cJSON_AddNumberToObject(o, "nrhs", (double)k);
        cJSON_AddTrueToObject(o, "pipeline");
        cJSON_AddStringToObject(o, "backend", sap_backend_name(sap_context_backend(ctx)));
        cJSON_AddStringToObject(o, "device", sap_context_device_name(ctx));
        cJSON_AddBoolToObject(o, "on_host", ss.on_host);
        cJSON_AddStringToObject(o, "method", sap_solver_method_name(ss.method));
        cJSON_AddStringToObject(o, "reason", ss.reason);
        cJSON *tried = cJSON_AddArrayToObject(o, "tried");
        for (int i = 0; i < ss.ntries; i++) {
            cJSON *t = cJSON_CreateObject();
            cJSON_AddStringToObject(t, "method", sap_solver_method_name(ss.tried[i].method));
            cJSON_AddStringToObject(t, "status", sap_status_name(ss.tried[i].status));
            cJSON_AddNumberToObject(t, "partitions", (double)ss.tried[i].partitions);
            cJSON_AddNumberToObject(t, "half_bandwidth", (double)ss.tried[i].half_bandwidth);
            cJSON_AddNumberToObject(t, "iterations", ss.tried[i].iterations);
            cJSON_AddNumberToObject(t, "time", ss.tried[i].time);
            cJSON_AddStringToObject(t, "note", ss.tried[i].note);
            cJSON_AddItemToArray(tried, t);
        }
        cJSON_AddBoolToObject(o, "spd", ss.spd);
        cJSON_AddBoolToObject(o, "db", ss.db_used);
        cJSON_AddBoolToObject(o, "scaled", ss.scaled);
        cJSON_AddBoolToObject(o, "cm", ss.cm_used);
        cJSON_AddBoolToObject(o, "third_stage", ss.third_stage_used);
        cJSON_AddNumberToObject(o, "K_original", (double)ss.K_original);
        cJSON_AddNumberToObject(o, "K_cm", (double)ss.K_cm);
        cJSON_AddNumberToObject(o, "K_drop", (double)ss.K_drop);
        cJSON_AddNumberToObject(o, "K_max", (double)ss.K_max);
        cJSON_AddNumberToObject(o, "kept_fraction", ss.kept_fraction);
        cJSON_AddNumberToObject(o, "partitions", (double)ss.partitions);
        cJSON_AddStringToObject(o, "precision", ss.factor_precision == SAP_FLOAT ? "float" : "double");
        cJSON_AddStringToObject(o, "krylov", sap_krylov_name(ss.krylov_type));
        cJSON_AddNumberToObject(o, "boosted_pivots", (double)ss.boosted_pivots);
        cJSON_AddNumberToObject(o, "dropped_entries", (double)ss.dropped_entries);
        cJSON_AddNumberToObject(o, "memory_estimate", (double)ss.memory_estimate);
        cJSON_AddNumberToObject(o, "tol", sopt->krylov.tol);
        cJSON_AddNumberToObject(o, "maxit", (double)sopt->krylov.maxit);
        cJSON_AddStringToObject(o, "status", sap_status_name(st));
        cJSON_AddNumberToObject(o, "status_code", (double)st);
        cJSON_AddStringToObject(o, "message", msg);
        cJSON_AddBoolToObject(o, "converged", st == SAP_OK);
        cJSON_AddNumberToObject(o, "iterations", ss.iterations);
        cJSON_AddNumberToObject(o, "true_residual", res);
        cJSON_AddNumberToObject(o, "error", err);
        cJSON *tm = cJSON_AddObjectToObject(o, "time");
        const struct {
            const char *name;
            double t;
        } times[] = {{"T_DB", ss.time_db},         {"T_CM", ss.time_cm},         {"T_Drop", ss.time_drop},
                     {"T_third", ss.time_third},   {"T_Dtransf", ss.time_transfer}, {"T_Asmbl", ss.time_asmbl},
                     {"T_LU", ss.time_lu},         {"T_SPK", ss.time_spk},       {"T_LUrdcd", ss.time_lurdcd},
                     {"T_Kry", ss.time_kry},       {"load", t_load},             {"setup", t_setup},
                     {"solve", t_solve},           {"total", t_total}};
        for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
            cJSON_AddNumberToObject(tm, times[i].name, sap_tool_json_fixed(times[i].t, 6));
        add_transfers(o, &cs);
        int wrc = sap_tool_json_write(a->report, o, SAP_JSON_PRETTY);
        cJSON_Delete(o);
        if (wrc) {
            fprintf(stderr, "sap solve: cannot write the report '%s'\n", a->report);
            goto done;
        }
    }
    if (a->out) {
        sap_dense *Xd = NULL;
        sap_status ws = sap_dense_create(ctx, n, k, &Xd);
        if (ws >= 0) {
            for (sap_int j = 0; j < k; j++)
                if (n > 0) memcpy(Xd->val + j * Xd->ld, X + j * n, sizeof(double) * (size_t)n);
            sap_mm_write_options wo;
            sap_mm_write_options_init(&wo);
            wo.format = SAP_MM_ARRAY;
            ws = sap_mm_write_dense(Xd, a->out, &wo);
            sap_dense_destroy(Xd);
        }
        if (ws < 0) {
            exit_code = sap_tool_fail("solve", ctx, ws);
            goto done;
        }
    }
    (void)setup_st;
    if (st < 0) {
        fprintf(stderr, "sap solve: %s: %s\n", sap_status_string(st), msg);
        exit_code = 1;
    } else {
        exit_code = st == SAP_OK ? 0 : EXIT_NOT_CONVERGED;
        if (st != SAP_OK && !a->quiet) fprintf(stderr, "sap solve: not converged: %s\n", msg);
    }
done:
    sap_solver_destroy(S);
    free(B);
    free(X);
    free(XS);
    free(r);
    return exit_code;
}

int sap_cmd_solve(int argc, char **argv)
{
    solve_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc == 1) return 0;
    if (rc) return rc;

    /* option values */
    sap_krylov_options kopt;
    sap_krylov_options_init(&kopt);
    sap_matrix_options mopt;
    sap_matrix_options_init(&mopt);
    sap_backend backend;
    sap_precision pprec = SAP_DOUBLE;
    sap_xstar xkind = SAP_XSTAR_PARABOLA;
    if (sap_krylov_parse(a.krylov, &kopt.type, &kopt.param) != SAP_OK) {
        fprintf(stderr,
                "sap solve: unknown Krylov method '%s' (cg, bicgstab, bicgstabl:2, gmres:20, fgmres:30, idr:4)\n",
                a.krylov);
        return 2;
    }
    if (!strcmp(a.precond, "auto")) a.precond = "sap";
    if (strcmp(a.precond, "none") && strcmp(a.precond, "jacobi") && strncmp(a.precond, "sap", 3)) {
        fprintf(stderr, "sap solve: unknown preconditioner '%s' (none, jacobi, sap-d, sap-c, auto)\n", a.precond);
        return 2;
    }
    if (!strcmp(a.pprec, "float") || !strcmp(a.pprec, "single")) pprec = SAP_FLOAT;
    else if (strcmp(a.pprec, "double")) {
        fprintf(stderr, "sap solve: --precond-precision must be float or double\n");
        return 2;
    }
    if (!strcmp(a.side, "left")) kopt.side = SAP_PRECOND_LEFT;
    else if (!strcmp(a.side, "right")) kopt.side = SAP_PRECOND_RIGHT;
    else {
        fprintf(stderr, "sap solve: --side must be left or right\n");
        return 2;
    }
    if (sap_spmv_format_parse(a.format, &mopt.format) != SAP_OK) {
        fprintf(stderr, "sap solve: unknown SpMV format '%s' (auto, csr, ell, sellp, hec)\n", a.format);
        return 2;
    }
    if (sap_backend_parse(a.backend, &backend) != SAP_OK) {
        fprintf(stderr, "sap solve: unknown backend '%s' (cpu, cuda or auto)\n", a.backend);
        return 2;
    }
    if (!strcmp(a.xstar, "random")) xkind = SAP_XSTAR_RANDOM;
    else if (!strcmp(a.xstar, "ones")) xkind = SAP_XSTAR_ONES;
    else if (strcmp(a.xstar, "parabola")) {
        fprintf(stderr, "sap solve: --xstar must be parabola, random or ones\n");
        return 2;
    }
    kopt.tol = a.tol;
    kopt.maxit = (sap_int)a.maxit;
    kopt.stagnation_window = (sap_int)a.stagnation;
    sap_solver_options sopt;
    sap_solver_options_init(&sopt);
    if (a.pipeline) {
        sopt.krylov.tol = a.tol;
        sopt.krylov.maxit = (sap_int)a.maxit;
        sopt.krylov.stagnation_window = (sap_int)a.stagnation;
        sopt.partitions = (sap_int)a.partitions;
        if (sap_solver_method_parse(a.method, &sopt.method) != SAP_OK) {
            fprintf(stderr, "sap solve: unknown method '%s' (auto, sap-d, sap-c, band-lu, band-pivot, jacobi)\n",
                    a.method);
            return 2;
        }
        for (int i = 0; i < a.nopts; i++) {
            char name[64];
            const char *eq = strchr(a.opts[i], '=');
            size_t len = eq ? (size_t)(eq - a.opts[i]) : 0;
            if (!eq || len == 0 || len >= sizeof(name)) {
                fprintf(stderr, "sap solve: --opt needs NAME=VALUE, got '%s' (--opt help lists the options)\n",
                        a.opts[i]);
                return 2;
            }
            memcpy(name, a.opts[i], len);
            name[len] = 0;
            if (sap_solver_options_set(&sopt, name, eq + 1) != SAP_OK) {
                fprintf(stderr, "sap solve: bad option '%s' (unknown name or bad value)\n%s", a.opts[i],
                        sap_solver_options_help());
                return 2;
            }
        }
    }

    /* context (the log hook keeps the message that explains an 'auto' choice) */
    log_capture cap;
    memset(&cap, 0, sizeof(cap));
    sap_context_config cfg;
    sap_context_config_init(&cfg);
    cfg.backend = backend;
    cfg.threads = (int)a.threads;
    cfg.print_level = SAP_PRINT_INFO;
    cfg.log = capture_log;
    cfg.log_state = &cap;
    sap_context *ctx = NULL;
    sap_status st = sap_context_create(&ctx, &cfg);
    if (st != SAP_OK) {
        fprintf(stderr, "sap solve: cannot create a %s context: %s\n", sap_backend_name(backend),
                sap_status_string(st));
        return 1;
    }
    char backend_why[300] = "requested";
    if (backend == SAP_BACKEND_AUTO) {
        const char *m = strchr(cap.backend_msg, '(');
        if (sap_context_backend(ctx) == SAP_BACKEND_CUDA)
            snprintf(backend_why, sizeof(backend_why), "auto: CUDA device found");
        else if (m) snprintf(backend_why, sizeof(backend_why), "auto: %.*s", (int)strcspn(m + 1, ")"), m + 1);
        else
            snprintf(backend_why, sizeof(backend_why), "auto: %s",
                     sap_has_cuda() ? "no usable CUDA device" : "built without CUDA");
    }

    sap_csr *A = NULL;
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    sap_dense *B = NULL;
    double *b = NULL, *x = NULL, *xs = NULL, *r = NULL;
    sap_krylov_stats ks;
    memset(&ks, 0, sizeof(ks));
    const char *fail_stage = NULL;
    int exit_code = 1;
    double t_load = 0, t_matrix = 0, t_precond = 0, t_solve = 0;

    double t0 = now();
    st = sap_matrix_load(ctx, a.input, NULL, &A);
    if (st < 0) {
        fail_stage = "load";
        goto fail;
    }
    if (A->nrows != A->ncols) {
        fprintf(stderr, "sap solve: the matrix is %lld x %lld, not square\n", (long long)A->nrows, (long long)A->ncols);
        goto out;
    }
    const sap_int n = A->nrows;
    b = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    x = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    r = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!b || !x || !r) {
        fprintf(stderr, "sap solve: out of memory\n");
        goto out;
    }
    if (a.rhs) {
        st = sap_mm_read_dense(ctx, a.rhs, NULL, &B, NULL);
        if (st < 0) {
            fail_stage = "rhs";
            goto fail;
        }
        if (B->nrows != n || B->ncols < 1) {
            fprintf(stderr, "sap solve: the right-hand side is %lld x %lld, the matrix has %lld rows\n",
                    (long long)B->nrows, (long long)B->ncols, (long long)n);
            goto out;
        }
        for (sap_int i = 0; i < n; i++) b[i] = B->val[i];
    } else {
        xs = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        if (!xs) {
            fprintf(stderr, "sap solve: out of memory\n");
            goto out;
        }
        st = sap_gen_xstar(ctx, n, xkind, 1, xs);
        if (st >= 0) st = sap_csr_spmv(A, 1.0, xs, 0.0, b);
        if (st < 0) {
            fail_stage = "xstar";
            goto fail;
        }
    }
    t_load = now() - t0;

    if (a.pipeline) {
        exit_code = run_pipeline(&a, ctx, A, b, xs, xkind, &sopt, t_load, backend_why, B);
        goto out;
    }

    t0 = now();
    st = sap_matrix_create(ctx, A, &mopt, &M);
    t_matrix = now() - t0;
    if (st < 0) {
        fail_stage = "matrix";
        goto fail;
    }
    t0 = now();
    st = sap_precond_create(ctx, a.precond, &P);
    if (st >= 0) st = sap_precond_set_precision(P, pprec);
    if (st >= 0 && !strncmp(a.precond, "sap", 3)) { /* banded SaP: partitions */
        sap_band_options bopt;
        sap_band_options_init(&bopt);
        bopt.partitions = (sap_int)a.partitions;
        st = sap_precond_set_band_options(P, &bopt);
    }
    if (st >= 0) st = sap_precond_setup_symbolic(P, A);
    if (st >= 0) st = sap_precond_setup_numeric(P, A);
    t_precond = now() - t0;
    if (st < 0) {
        fail_stage = "preconditioner";
        goto fail;
    }

    char method[64];
    if (kopt.param || kopt.type == SAP_KRYLOV_BICGSTABL || kopt.type == SAP_KRYLOV_GMRES ||
        kopt.type == SAP_KRYLOV_FGMRES || kopt.type == SAP_KRYLOV_IDR) {
        int p = kopt.param;
        if (!p)
            p = kopt.type == SAP_KRYLOV_BICGSTABL ? 2
                : kopt.type == SAP_KRYLOV_GMRES   ? 20
                : kopt.type == SAP_KRYLOV_FGMRES  ? 30
                                                  : 4;
        snprintf(method, sizeof(method), "%s(%d)", sap_krylov_name(kopt.type), p);
    } else {
        snprintf(method, sizeof(method), "%s", sap_krylov_name(kopt.type));
    }
    progress prog = {isatty(2) && !a.quiet, 0.0, method, 0};
    kopt.monitor = monitor;
    kopt.monitor_state = &prog;
    st = sap_krylov_create(ctx, &kopt, &K);
    if (st < 0) {
        fail_stage = "krylov";
        goto fail;
    }
    sap_context_reset_transfer_stats(ctx);
    t0 = now();
    st = sap_krylov_solve(K, M, P, b, x, &ks);
    t_solve = now() - t0;
    progress_clear(&prog);
    sap_status solve_st = st;
    char solve_msg[1024] = "";
    if (st != SAP_OK) snprintf(solve_msg, sizeof(solve_msg), "%s", sap_context_last_error(ctx));
    if (st < 0 && st != SAP_ERR_BREAKDOWN) {
        fail_stage = "solve";
        goto fail;
    }
    sap_context_stats cs;
    sap_context_get_stats(ctx, &cs);

    /* true residual and error on the host, in double */
    double bn = 0, rn = 0, en = 0, xn = 0;
    sap_csr_spmv(A, 1.0, x, 0.0, r);
    for (sap_int i = 0; i < n; i++) {
        bn += b[i] * b[i];
        rn += (b[i] - r[i]) * (b[i] - r[i]);
        if (xs) {
            en += (x[i] - xs[i]) * (x[i] - xs[i]);
            xn += xs[i] * xs[i];
        }
    }
    const double truerel = bn > 0 ? sqrt(rn / bn) : sqrt(rn);
    const double err = xs ? (xn > 0 ? sqrt(en / xn) : sqrt(en)) : NAN;
    const int converged = solve_st == SAP_OK;
    const char *pname = sap_precond_name(P);
    const char *side = kopt.type == SAP_KRYLOV_CG ? "symmetric" : kopt.type == SAP_KRYLOV_FGMRES ? "right" : a.side;
    if (!strcmp(pname, "none")) side = "-";

    if (!a.quiet) {
        printf("matrix        %s (%lld x %lld, %lld nonzeros)\n", a.input, (long long)n, (long long)n,
               (long long)A->nnz);
        printf("rhs           %s\n", a.rhs ? a.rhs
                                           : (xkind == SAP_XSTAR_PARABOLA ? "b = A x*, x* parabola"
                                              : xkind == SAP_XSTAR_RANDOM ? "b = A x*, x* random"
                                                                          : "b = A x*, x* ones"));
        printf("backend       %s, %s (%s)\n", sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx),
               backend_why);
        printf("method        %s, tol %.3g, maxit %lld\n", method, kopt.tol, (long long)kopt.maxit);
        printf("precond       %s (%s, side %s)\n", pname, pprec == SAP_FLOAT ? "float" : "double", side);
        printf("spmv format   %s (%s)\n", sap_spmv_format_name(sap_matrix_format(M)), sap_matrix_format_reason(M));
        printf("status        %s: %s\n", sap_status_name(solve_st), sap_status_string(solve_st));
        if (solve_msg[0]) printf("message       %s\n", solve_msg);
        sap_band_stats bst;
        if (sap_precond_get_band_stats(P, &bst) == SAP_OK)
            printf("sap           %s, P = %lld, K = %lld, %lld boosted pivots (%s)\n"
                   "sap timings   T_LU %.6f s, T_BC %.6f s, T_SPK %.6f s, T_LUrdcd %.6f s, T_Kry %.6f s\n",
                   sap_band_method_name(bst.method), (long long)bst.partitions, (long long)bst.half_bandwidth,
                   (long long)bst.boosted_pivots, bst.reason, bst.time_lu, bst.time_bc, bst.time_spk,
                   bst.time_lurdcd, t_solve);
        printf("iterations    %g (%lld SpMV, %lld preconditioner applications)\n", ks.iterations,
               (long long)ks.spmv_count, (long long)ks.precond_count);
        printf("residual      recursive %.3e, true %.3e (||b - A x|| / ||b||)\n", ks.relative_residual, truerel);
        if (xs) printf("error         %.3e (||x - x*|| / ||x*||)\n", err);
        printf("time          load %.4f s, matrix %.4f s, preconditioner %.4f s, solve %.4f s\n", t_load, t_matrix,
               t_precond, t_solve);
        printf("solve phases  setup %.4f s, spmv %.4f s, preconditioner %.4f s, vector ops %.4f s\n", ks.time_setup,
               ks.time_spmv, ks.time_precond, ks.time_vector);
        printf("transfers     host->device %lld bytes (%lld copies), device->host %lld bytes (%lld copies)\n",
               (long long)cs.h2d_bytes, (long long)cs.h2d_copies, (long long)cs.d2h_bytes, (long long)cs.d2h_copies);
    }
    if (a.report) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "matrix", a.input);
        cJSON_AddNumberToObject(o, "nrows", (double)n);
        cJSON_AddNumberToObject(o, "nnz", (double)A->nnz);
        cJSON_AddStringToObject(o, "rhs", a.rhs ? a.rhs : a.xstar);
        cJSON_AddBoolToObject(o, "manufactured", xs != NULL);
        cJSON_AddStringToObject(o, "backend", sap_backend_name(sap_context_backend(ctx)));
        cJSON_AddStringToObject(o, "device", sap_context_device_name(ctx));
        cJSON_AddStringToObject(o, "backend_reason", backend_why);
        cJSON_AddNumberToObject(o, "threads", sap_context_threads(ctx));
        cJSON_AddStringToObject(o, "method", method);
        cJSON_AddStringToObject(o, "precond", pname);
        cJSON_AddStringToObject(o, "precond_precision", pprec == SAP_FLOAT ? "float" : "double");
        cJSON_AddStringToObject(o, "side", side);
        cJSON_AddStringToObject(o, "format", sap_spmv_format_name(sap_matrix_format(M)));
        cJSON_AddStringToObject(o, "format_reason", sap_matrix_format_reason(M));
        cJSON_AddNumberToObject(o, "tol", kopt.tol);
        cJSON_AddNumberToObject(o, "maxit", (double)kopt.maxit);
        cJSON_AddStringToObject(o, "status", sap_status_name(solve_st));
        cJSON_AddNumberToObject(o, "status_code", (double)solve_st);
        cJSON_AddStringToObject(o, "message", solve_msg);
        cJSON_AddBoolToObject(o, "converged", converged);
        cJSON_AddNumberToObject(o, "iterations", ks.iterations);
        cJSON_AddNumberToObject(o, "relative_residual", ks.relative_residual);
        cJSON_AddNumberToObject(o, "true_residual", truerel);
        cJSON_AddNumberToObject(o, "error", err);
        cJSON_AddNumberToObject(o, "spmv_count", (double)ks.spmv_count);
        cJSON_AddNumberToObject(o, "precond_count", (double)ks.precond_count);
        cJSON *tm = cJSON_AddObjectToObject(o, "time");
        const struct {
            const char *name;
            double t;
        } times[] = {{"load", t_load},         {"matrix", t_matrix},        {"precond_setup", t_precond},
                     {"solve", t_solve},       {"solve_setup", ks.time_setup}, {"spmv", ks.time_spmv},
                     {"precond", ks.time_precond}, {"vector", ks.time_vector}};
        for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
            cJSON_AddNumberToObject(tm, times[i].name, sap_tool_json_fixed(times[i].t, 6));
        add_transfers(o, &cs);
        cJSON *hist = cJSON_AddArrayToObject(o, "history");
        for (sap_int i = 0; i < ks.history_length; i++) cJSON_AddItemToArray(hist, cJSON_CreateNumber(ks.history[i]));
        int wrc = sap_tool_json_write(a.report, o, SAP_JSON_PRETTY);
        cJSON_Delete(o);
        if (wrc) {
            fprintf(stderr, "sap solve: cannot write the report '%s'\n", a.report);
            goto out;
        }
    }
    if (a.out) {
        sap_dense *X = NULL;
        st = sap_dense_create(ctx, n, 1, &X);
        if (st >= 0) {
            if (n > 0) memcpy(X->val, x, sizeof(double) * (size_t)n);
            sap_mm_write_options wo;
            sap_mm_write_options_init(&wo);
            wo.format = SAP_MM_ARRAY;
            st = sap_mm_write_dense(X, a.out, &wo);
            sap_dense_destroy(X);
        }
        if (st < 0) {
            fail_stage = "output";
            goto fail;
        }
    }
    if (solve_st < 0) {
        /* NaN/Inf breakdown: an error, reported after the summary */
        fprintf(stderr, "sap solve: %s: %s\n", sap_status_string(solve_st), solve_msg);
        exit_code = 1;
    } else {
        exit_code = converged ? 0 : EXIT_NOT_CONVERGED;
        if (!converged && !a.quiet) fprintf(stderr, "sap solve: not converged: %s\n", solve_msg);
    }
    goto out;

fail:
    (void)fail_stage;
    exit_code = sap_tool_fail("solve", ctx, st);
out:
    free(b);
    free(x);
    free(xs);
    free(r);
    sap_dense_destroy(B);
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return exit_code;
}
