/* cmd_solve.c -- `sap solve FILE|SPEC`: solves A x = b with a Krylov method and a simple
 * preconditioner on the chosen backend, then prints a summary (and optionally writes x and
 * a JSON report).  Without --rhs the system is manufactured: b = A x*.
 *
 * Exit codes: 0 converged (true residual <= tol), 1 error (bad input, out of memory,
 * NaN/Inf breakdown, ...), 2 usage error, 3 not converged (iteration limit, stagnation or
 * breakdown: x is the best iterate and is still written with -o). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty, fileno under -std=c11 */
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
    fprintf(f, "usage: sap solve FILE|SPEC [--rhs FILE] [--krylov METHOD] [--precond none|jacobi|sap-d|sap-c|auto]\n"
               "                 [--partitions P]\n"
               "                 [--precond-precision float|double] [--side left|right]\n"
               "                 [--format auto|csr|ell|sellp|hec] [--tol T] [--maxit N] [--stagnation N]\n"
               "                 [--backend cpu|cuda|auto] [--threads N] [--xstar parabola|random|ones]\n"
               "                 [-o X.mtx] [--report OUT.json] [--quiet]\n\n"
               "Solves A x = b with a preconditioned Krylov method and prints a summary: backend,\n"
               "method, SpMV format, iterations, relative residual (recursive and true), the error\n"
               "against x* when the system is manufactured, time per phase, bytes moved between\n"
               "host and device.\n\n"
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

/* ---- JSON helpers ------------------------------------------------------------------------------ */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.17g", v);
    else fprintf(f, "null");
}

/* ---- the command ---------------------------------------------------------------------------------- */

typedef struct solve_args {
    const char *input, *rhs, *krylov, *precond, *pprec, *side, *format, *backend, *xstar, *out, *report;
    double tol;
    long long maxit, threads, stagnation, partitions;
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
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const int has = i + 1 < argc;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(o, "--quiet") || !strcmp(o, "-q")) {
            a->quiet = 1;
        } else if (o[0] == '-' && o[1] && !has) {
            fprintf(stderr, "sap solve: unknown option or missing value '%s'\n", o);
            return 2;
        } else if (!strcmp(o, "--rhs")) a->rhs = argv[++i];
        else if (!strcmp(o, "--krylov")) a->krylov = argv[++i];
        else if (!strcmp(o, "--precond")) a->precond = argv[++i];
        else if (!strcmp(o, "--precond-precision")) a->pprec = argv[++i];
        else if (!strcmp(o, "--side")) a->side = argv[++i];
        else if (!strcmp(o, "--format")) a->format = argv[++i];
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
                   !strcmp(o, "--partitions")) {
            long long v = 0;
            if (sap_tool_parse_int(argv[i + 1], &v)) {
                fprintf(stderr, "sap solve: %s needs a non-negative integer\n", o);
                return 2;
            }
            i++;
            if (!strcmp(o, "--maxit")) a->maxit = v;
            else if (!strcmp(o, "--threads")) a->threads = v;
            else if (!strcmp(o, "--partitions")) a->partitions = v;
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
    return 0;
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
        FILE *f = fopen(a.report, "w");
        if (!f) {
            fprintf(stderr, "sap solve: cannot write the report '%s'\n", a.report);
            goto out;
        }
        fprintf(f, "{\n  \"matrix\": ");
        json_str(f, a.input);
        fprintf(f, ",\n  \"nrows\": %lld,\n  \"nnz\": %lld,\n  \"rhs\": ", (long long)n, (long long)A->nnz);
        if (a.rhs) json_str(f, a.rhs);
        else json_str(f, a.xstar);
        fprintf(f, ",\n  \"manufactured\": %s,\n  \"backend\": ", xs ? "true" : "false");
        json_str(f, sap_backend_name(sap_context_backend(ctx)));
        fprintf(f, ",\n  \"device\": ");
        json_str(f, sap_context_device_name(ctx));
        fprintf(f, ",\n  \"backend_reason\": ");
        json_str(f, backend_why);
        fprintf(f, ",\n  \"threads\": %d,\n  \"method\": ", sap_context_threads(ctx));
        json_str(f, method);
        fprintf(f, ",\n  \"precond\": ");
        json_str(f, pname);
        fprintf(f, ",\n  \"precond_precision\": \"%s\",\n  \"side\": ", pprec == SAP_FLOAT ? "float" : "double");
        json_str(f, side);
        fprintf(f, ",\n  \"format\": ");
        json_str(f, sap_spmv_format_name(sap_matrix_format(M)));
        fprintf(f, ",\n  \"format_reason\": ");
        json_str(f, sap_matrix_format_reason(M));
        fprintf(f, ",\n  \"tol\": ");
        json_num(f, kopt.tol);
        fprintf(f, ",\n  \"maxit\": %lld,\n  \"status\": ", (long long)kopt.maxit);
        json_str(f, sap_status_name(solve_st));
        fprintf(f, ",\n  \"status_code\": %d,\n  \"message\": ", (int)solve_st);
        json_str(f, solve_msg);
        fprintf(f, ",\n  \"converged\": %s,\n  \"iterations\": ", converged ? "true" : "false");
        json_num(f, ks.iterations);
        fprintf(f, ",\n  \"relative_residual\": ");
        json_num(f, ks.relative_residual);
        fprintf(f, ",\n  \"true_residual\": ");
        json_num(f, truerel);
        fprintf(f, ",\n  \"error\": ");
        json_num(f, err);
        fprintf(f, ",\n  \"spmv_count\": %lld,\n  \"precond_count\": %lld,\n", (long long)ks.spmv_count,
                (long long)ks.precond_count);
        fprintf(f,
                "  \"time\": {\"load\": %.6f, \"matrix\": %.6f, \"precond_setup\": %.6f, \"solve\": %.6f, "
                "\"solve_setup\": %.6f, \"spmv\": %.6f, \"precond\": %.6f, \"vector\": %.6f},\n",
                t_load, t_matrix, t_precond, t_solve, ks.time_setup, ks.time_spmv, ks.time_precond, ks.time_vector);
        fprintf(f,
                "  \"transfers\": {\"h2d_bytes\": %lld, \"d2h_bytes\": %lld, \"h2d_copies\": %lld, \"d2h_copies\": "
                "%lld},\n",
                (long long)cs.h2d_bytes, (long long)cs.d2h_bytes, (long long)cs.h2d_copies, (long long)cs.d2h_copies);
        fprintf(f, "  \"history\": [");
        for (sap_int i = 0; i < ks.history_length; i++) {
            if (i) fputs(", ", f);
            json_num(f, ks.history[i]);
        }
        fprintf(f, "]\n}\n");
        if (fclose(f) != 0) {
            fprintf(stderr, "sap solve: error writing the report '%s'\n", a.report);
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
