/* solve_args.c -- owns the command line of `sap solve`: its usage text, its own options
 * (the shared ones are args.c's), and what they mean: the checks of every value and the
 * option structs of the library (sap_solver_options for the SaP pipeline,
 * sap_krylov_options + sap_matrix_options for the explicit Krylov path). */
#include "solve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* "a|b|c" or "a, b, c" of the registered preconditioner types / Krylov methods. */
static const char *precond_list(const char *sep)
{
    static char buf[2][512];
    char *b = buf[sep[0] == '|'];
    b[0] = 0;
    for (int i = 0; i < sap_precond_type_count(); i++) {
        if (i) strncat(b, sep, 511 - strlen(b));
        strncat(b, sap_precond_type_name(i), 511 - strlen(b));
    }
    return b;
}

static const char *krylov_list(void)
{
    static char b[512];
    b[0] = 0;
    for (int i = 0; i < sap_krylov_method_count(); i++) {
        if (i) strncat(b, ", ", 511 - strlen(b));
        strncat(b, sap_krylov_method_name(i), 511 - strlen(b));
    }
    return b;
}

/* "a|b|c" or "a, b, c" of the strategy methods of the pipeline ("auto" first). */
static const char *method_list(const char *sep)
{
    static char buf[2][512];
    char *b = buf[sep[0] == '|'];
    b[0] = 0;
    for (int i = 0; i < sap_solver_method_count(); i++) {
        if (i) strncat(b, sep, 511 - strlen(b));
        strncat(b, sap_solver_method_name((sap_solver_method)i), 511 - strlen(b));
    }
    return b;
}

/* --precond help: every preconditioner type with its options. */
static void precond_help(FILE *f)
{
    fprintf(f, "preconditioners (--precond NAME or NAME:V1,V2,.. giving the options below in order,\n"
               "e.g. iluk:2, ilut:7,0.01; or options by --pc-opt NAME=VALUE):\n");
    for (int i = 0; i < sap_precond_type_count(); i++) fputs(sap_precond_type_help(i), f);
    fprintf(f, "auto: sap (the banded SaP preconditioner, SaP-D or SaP-C chosen from the matrix)\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: sap solve FILE|SPEC [--method %s] [--opt NAME=VALUE]...\n"
               "                 [--nrhs K] [--profile]\n"
               "       sap solve FILE|SPEC [--rhs FILE] [--krylov METHOD] [--precond NAME|auto|help]\n"
               "                 [--pc-opt NAME=VALUE]... [--partitions P]\n"
               "                 [--precond-precision float|double] [--side left|right]\n"
               "                 [--format auto|csr|ell|sellp|hec] [--tol T] [--maxit N] [--stagnation N]\n"
               "                 [--backend cpu|cuda|auto] [--threads N] [--xstar parabola|random|ones]\n"
               "                 [-o X.mtx] [--report OUT.json] [--json] [--quiet] [--force] [--allow-nonfinite]\n\n"
               "Without --precond and --krylov, solves A x = b with the sparse SaP pipeline (DB, CM,\n"
               "drop-off, partitions, SaP-D/SaP-C preconditioned BiCGStab(2) or CG, with automatic\n"
               "choices and a fallback chain) and prints its profile: the method and why, every\n"
               "method tried, K after each stage, P, precision, T_DB, T_CM, T_Drop, T_Dtransf,\n"
               "T_Asmbl, T_LU, T_SPK, T_LUrdcd, T_Kry.  With --precond, --krylov, --side, --format or\n"
               "--precond-precision, solves with that\n"
               "Krylov method and preconditioner and prints a summary: backend, method, SpMV format,\n"
               "iterations, relative residual (recursive and true), the error against x* when the\n"
               "system is manufactured, time per phase, bytes moved between host and device.\n\n"
               "  --method M        pipeline method (default auto; a forced method still falls back\n"
               "                    unless --opt fallback=0); the methods:\n",
            method_list("|"));
    for (int i = 0; i < sap_solver_method_count(); i++)
        fprintf(f, "                      %s", sap_solver_method_help(i));
    fprintf(f, "  --opt NAME=VALUE  pipeline option (repeatable), e.g. drop=0.999, db=none,\n"
               "                    precision=double, memory_limit=2G; --opt help lists them\n"
               "  --nrhs K          solve K manufactured right-hand sides at once (x*: the parabola,\n"
               "                    then random vectors)\n"
               "  --profile         accepted for compatibility: the pipeline always prints its profile\n"
               "  --rhs FILE        right-hand side (Matrix Market, first column); default b = A x*\n"
               "  --xstar KIND      manufactured solution: parabola (default; 1 at the ends, 400 in\n"
               "                    the middle), random (uniform in [-1, 1], seed 1) or ones\n"
               "  --krylov METHOD[:p]  default bicgstabl:2 (BiCGStab(l) counts iterations in 1/(2l)\n"
               "                    steps); the methods:\n");
    for (int i = 0; i < sap_krylov_method_count(); i++) fprintf(f, "                      %s", sap_krylov_method_help(i));
    fprintf(f, "  --precond P       %s (default none), or auto (SaP: prints T_LU, T_BC,\n"
               "                    T_SPK, T_LUrdcd, T_Kry); --precond help lists each with its options\n"
               "  --pc-opt N=V      an option of the preconditioner (repeatable), e.g. partitions=8\n"
               "  --partitions P    SaP partitions (default 0: automatic), short for --pc-opt partitions=P\n",
            precond_list(", "));
    fprintf(f, "  --precond-precision float|double   precision of the preconditioner (default double)\n"
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
               "  --json            print that JSON on stdout instead of the text summary\n"
               "  --quiet           no progress line and no summary (errors, long-step warnings and\n"
               "                    the SIGINT outcome still go to stderr)\n"
               "  --force           run a step predicted to take over an hour (refused otherwise)\n"
               "  --allow-nonfinite accept NaN/Inf values in the matrix file\n"
               "  --symmetric-upper=warn|reject|sum  entries above the diagonal of a symmetric file:\n"
               "                    warn (default: take them as given, fill only missing mirrors),\n"
               "                    reject, or sum (mirror all: doubles a stored pair)\n\n"
               "A step predicted to take over 5 s (a band factorization: on a GPU not interruptible) is announced\n"
               "on stderr before it starts, with the estimate; over an hour it is refused unless --force.\n"
               "On a terminal a progress line shows the Krylov iterations of every method tried.  SIGINT\n"
               "(Ctrl-C) stops the solve at its next iteration (on the cpu also inside a band factorization)\n"
               "with the best x so far: the summary gives\n"
               "its true residual, -o writes it, no fallback is tried; a second SIGINT exits at once.\n\n"
               "Environment: SAP_LOG=info prints the library's progress messages (each stage's parts and\n"
               "times) on stderr as they come.\n\n"
               "Exit status: 0 converged, 1 error (or a step refused), 2 usage error, 3 not converged\n"
               "(iteration limit, stagnation or breakdown), 130 stopped by SIGINT.\n");
}

enum {
    OPT_RHS = SAP_ARG_OWN,
    OPT_KRYLOV,
    OPT_PRECOND,
    OPT_METHOD,
    OPT_OPT,
    OPT_PROFILE,
    OPT_PPREC,
    OPT_SIDE,
    OPT_FORMAT,
    OPT_REPORT,
    OPT_TOL,
    OPT_MAXIT,
    OPT_STAGNATION,
    OPT_PARTITIONS,
    OPT_NRHS,
    OPT_PC_OPT,
    OPT_FORCE
};

static const struct option own_options[] = {{"rhs", required_argument, NULL, OPT_RHS},
                                            {"krylov", required_argument, NULL, OPT_KRYLOV},
                                            {"precond", required_argument, NULL, OPT_PRECOND},
                                            {"method", required_argument, NULL, OPT_METHOD},
                                            {"opt", required_argument, NULL, OPT_OPT},
                                            {"profile", no_argument, NULL, OPT_PROFILE},
                                            {"precond-precision", required_argument, NULL, OPT_PPREC},
                                            {"side", required_argument, NULL, OPT_SIDE},
                                            {"format", required_argument, NULL, OPT_FORMAT},
                                            {"report", required_argument, NULL, OPT_REPORT},
                                            {"tol", required_argument, NULL, OPT_TOL},
                                            {"maxit", required_argument, NULL, OPT_MAXIT},
                                            {"stagnation", required_argument, NULL, OPT_STAGNATION},
                                            {"partitions", required_argument, NULL, OPT_PARTITIONS},
                                            {"nrhs", required_argument, NULL, OPT_NRHS},
                                            {"pc-opt", required_argument, NULL, OPT_PC_OPT},
                                            {"force", no_argument, NULL, OPT_FORCE},
                                            {NULL, 0, NULL, 0}};

/* The option values as given, before they are resolved into the library's structs. */
typedef struct raw_args {
    solve_args *a;
    const char *method;
    const char *opts[SAP_SOLVE_MAX_OPTS];
    int nopts;
    int explicit_path; /* an option of the explicit Krylov path was given */
    double tol;
    long long maxit, stagnation, partitions, nrhs;
} raw_args;

static int take(void *state, int val, const char *arg)
{
    raw_args *r = state;
    solve_args *a = r->a;
    long long *count = NULL;
    switch (val) {
    case OPT_RHS: a->rhs = arg; return 0;
    case OPT_REPORT: a->report = arg; return 0;
    case OPT_PROFILE: return 0; /* the pipeline prints its profile anyway */
    case OPT_FORCE: a->force = 1; return 0;
    case OPT_METHOD: r->method = arg; return 0;
    case OPT_OPT:
        if (!strcmp(arg, "help")) {
            fputs(sap_solver_options_help(), stdout);
            return 1;
        }
        if (r->nopts >= SAP_SOLVE_MAX_OPTS) {
            fprintf(stderr, "sap solve: at most %d --opt options\n", SAP_SOLVE_MAX_OPTS);
            return 2;
        }
        r->opts[r->nopts++] = arg;
        return 0;
    /* the options of the explicit Krylov + preconditioner path select it */
    case OPT_KRYLOV:
        r->explicit_path = 1;
        if (sap_krylov_parse(arg, &a->kopt.type, &a->kopt.param) != SAP_OK) {
            fprintf(stderr, "sap solve: unknown Krylov method '%s' (%s, with an optional :p)\n", arg, krylov_list());
            return 2;
        }
        return 0;
    case OPT_PRECOND:
        if (!strcmp(arg, "help")) {
            precond_help(stdout);
            return 1;
        }
        r->explicit_path = 1;
        a->precond = !strcmp(arg, "auto") ? "sap" : arg;
        /* NAME or NAME:V1,V2,.. (the type's options in order; sap_precond_create parses them) */
        const size_t nlen = strcspn(a->precond, ":");
        for (int i = 0; i < sap_precond_type_count(); i++)
            if (strlen(sap_precond_type_name(i)) == nlen && !strncasecmp(a->precond, sap_precond_type_name(i), nlen))
                return 0;
        fprintf(stderr, "sap solve: unknown preconditioner '%s' (%s, auto; --precond help)\n", arg,
                precond_list(", "));
        return 2;
    case OPT_PC_OPT:
        r->explicit_path = 1;
        if (a->npc_opts >= SAP_SOLVE_MAX_OPTS) {
            fprintf(stderr, "sap solve: at most %d --pc-opt options\n", SAP_SOLVE_MAX_OPTS);
            return 2;
        }
        if (!strchr(arg, '=')) {
            fprintf(stderr, "sap solve: --pc-opt needs NAME=VALUE, got '%s' (--precond help lists them)\n", arg);
            return 2;
        }
        a->pc_opts[a->npc_opts++] = arg;
        return 0;
    case OPT_PPREC:
        r->explicit_path = 1;
        if (!strcmp(arg, "float") || !strcmp(arg, "single")) a->pprec = SAP_FLOAT;
        else if (!strcmp(arg, "double")) a->pprec = SAP_DOUBLE;
        else {
            fprintf(stderr, "sap solve: --precond-precision must be float or double\n");
            return 2;
        }
        return 0;
    case OPT_SIDE:
        r->explicit_path = 1;
        if (!strcmp(arg, "left")) a->kopt.side = SAP_PRECOND_LEFT;
        else if (!strcmp(arg, "right")) a->kopt.side = SAP_PRECOND_RIGHT;
        else {
            fprintf(stderr, "sap solve: --side must be left or right\n");
            return 2;
        }
        a->side = arg;
        return 0;
    case OPT_FORMAT:
        r->explicit_path = 1;
        if (sap_spmv_format_parse(arg, &a->mopt.format) != SAP_OK) {
            fprintf(stderr, "sap solve: unknown SpMV format '%s' (auto, csr, ell, sellp, hec)\n", arg);
            return 2;
        }
        return 0;
    case OPT_TOL:
        if (sap_tool_parse_real(arg, &r->tol) || r->tol < 0) {
            fprintf(stderr, "sap solve: --tol needs a number >= 0\n");
            return 2;
        }
        return 0;
    case OPT_MAXIT: count = &r->maxit; break;
    case OPT_STAGNATION: count = &r->stagnation; break;
    case OPT_PARTITIONS: count = &r->partitions; a->partitions_given = 1; break;
    case OPT_NRHS: count = &r->nrhs; break;
    default: return 2;
    }
    if (sap_tool_parse_int(arg, count) || *count > 2000000000) {
        const char *name = NULL;
        for (const struct option *o = own_options; o->name; o++)
            if (o->val == val) name = o->name;
        fprintf(stderr, "sap solve: --%s needs a non-negative integer\n", name);
        return 2;
    }
    return 0;
}

/* The options of the SaP pipeline: --method and each --opt NAME=VALUE. */
static int resolve_pipeline(const raw_args *r, sap_solver_options *sopt)
{
    if (sap_solver_method_parse(r->method, &sopt->method) != SAP_OK) {
        fprintf(stderr, "sap solve: unknown method '%s' (%s)\n", r->method, method_list(", "));
        return 2;
    }
    for (int i = 0; i < r->nopts; i++) {
        char name[64];
        const char *eq = strchr(r->opts[i], '=');
        size_t len = eq ? (size_t)(eq - r->opts[i]) : 0;
        if (!eq || len == 0 || len >= sizeof(name)) {
            fprintf(stderr, "sap solve: --opt needs NAME=VALUE, got '%s' (--opt help lists the options)\n",
                    r->opts[i]);
            return 2;
        }
        memcpy(name, r->opts[i], len);
        name[len] = 0;
        char why[512];
        if (sap_solver_options_set_msg(sopt, name, eq + 1, why, sizeof(why)) != SAP_OK) {
            fprintf(stderr, "sap solve: bad option '%s': %s (--opt help lists the options)\n", r->opts[i], why);
            return 2;
        }
    }
    return 0;
}

int solve_parse_args(int argc, char **argv, solve_args *a)
{
    memset(a, 0, sizeof(*a));
    sap_solver_options_init(&a->sopt);
    sap_krylov_options_init(&a->kopt);
    sap_matrix_options_init(&a->mopt);
    if (sap_krylov_parse("bicgstabl:2", &a->kopt.type, &a->kopt.param) != SAP_OK) return 2;
    a->kopt.side = SAP_PRECOND_RIGHT;
    a->side = "right";
    a->precond = "none";
    a->pprec = SAP_DOUBLE;
    raw_args r;
    memset(&r, 0, sizeof(r));
    r.a = a;
    r.method = "auto";
    r.tol = 1e-10;
    r.maxit = 1000;
    r.nrhs = 1;

    const sap_tool_command cmd = {"solve",
                                  SAP_ARG_THREADS | SAP_ARG_BACKEND | SAP_ARG_QUIET | SAP_ARG_OUTPUT | SAP_ARG_READ |
                                      SAP_ARG_XSTAR | SAP_ARG_JSON,
                                  own_options,
                                  "matrix",
                                  1,
                                  usage,
                                  take,
                                  &r};
    int rc = sap_tool_parse_args(&cmd, argc, argv, &a->common);
    if (rc) return rc;
    if ((rc = sap_tool_need_positional(&cmd, &a->common))) return rc;
    a->input = a->common.positional[0];
    a->pipeline = !r.explicit_path;
    if (!a->pipeline && (r.nopts || strcmp(r.method, "auto") || r.nrhs != 1)) {
        fprintf(stderr, "sap solve: --method, --opt and --nrhs belong to the SaP pipeline (without --precond, "
                        "--krylov, --side, --format, --precond-precision)\n");
        return 2;
    }
    if (r.nrhs < 1) {
        fprintf(stderr, "sap solve: --nrhs needs K >= 1\n");
        return 2;
    }
    a->nrhs = (sap_int)r.nrhs;
    a->partitions = (sap_int)r.partitions;
    a->kopt.tol = r.tol;
    a->kopt.maxit = (sap_int)r.maxit;
    a->kopt.stagnation_window = (sap_int)r.stagnation;
    if (a->pipeline) {
        a->sopt.krylov.tol = r.tol;
        a->sopt.krylov.maxit = (sap_int)r.maxit;
        a->sopt.krylov.stagnation_window = (sap_int)r.stagnation;
        a->sopt.partitions = (sap_int)r.partitions;
        if ((rc = resolve_pipeline(&r, &a->sopt))) return rc;
    }
    return 0;
}
