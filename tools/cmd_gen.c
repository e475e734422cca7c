/* cmd_gen.c -- `sap gen SPEC -o FILE.mtx[.gz]`: writes a generated matrix (and optionally
 * a manufactured right-hand side b = A x*) as Matrix Market. */
#include "args.h"
#include "json_out.h"
#include "sap_tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: sap gen SPEC -o FILE.mtx[.gz] [--symmetric] [--rhs B.mtx] [--solution X.mtx]\n"
               "               [--xstar parabola|random|ones] [--seed S] [--precision P] [--json]\n\n"
               "Generates a matrix from SPEC and writes it in Matrix Market coordinate format\n"
               "(gzip-compressed when FILE ends in .gz).\n\n"
               "  -o FILE         output matrix file (required)\n"
               "  --json          print the outcome as one JSON object\n"
               "  --symmetric     write only the lower triangle with a 'symmetric' header\n"
               "                  (the matrix must be symmetric)\n"
               "  --rhs B.mtx     also write b = A x* as a Matrix Market array\n"
               "  --solution X    also write x* as a Matrix Market array\n"
               "  --xstar KIND    manufactured solution: parabola (default; 1 at the ends, 400 in\n"
               "                  the middle), random (uniform in [-1, 1]) or ones\n"
               "  --seed S        seed for a random x* (default 1)\n"
               "  --precision P   significant digits written (default 17: exact round trip)\n\n"
               "%s",
            sap_gen_spec_help());
}

static int write_vector(sap_context *ctx, const double *v, sap_int n, const char *path, int precision)
{
    sap_dense *D = NULL;
    sap_status st = sap_dense_create(ctx, n, 1, &D);
    if (st < 0) return sap_tool_fail("gen", ctx, st);
    memcpy(D->val, v, sizeof(double) * (size_t)n);
    sap_mm_write_options wo;
    sap_mm_write_options_init(&wo);
    wo.format = SAP_MM_ARRAY;
    wo.precision = precision;
    st = sap_mm_write_dense(D, path, &wo);
    sap_dense_destroy(D);
    return st < 0 ? sap_tool_fail("gen", ctx, st) : 0;
}

enum { OPT_SYMMETRIC = SAP_ARG_OWN, OPT_RHS, OPT_SOLUTION, OPT_SEED, OPT_PRECISION };

typedef struct gen_args {
    const char *rhs, *sol;
    long long seed, precision;
    int symmetric;
} gen_args;

static int take(void *state, int val, const char *arg)
{
    gen_args *g = state;
    switch (val) {
    case OPT_SYMMETRIC: g->symmetric = 1; return 0;
    case OPT_RHS: g->rhs = arg; return 0;
    case OPT_SOLUTION: g->sol = arg; return 0;
    case OPT_SEED:
        if (sap_tool_parse_int(arg, &g->seed)) {
            fprintf(stderr, "sap gen: --seed needs a non-negative integer\n");
            return 2;
        }
        return 0;
    case OPT_PRECISION:
        if (sap_tool_parse_int(arg, &g->precision) || g->precision < 1 || g->precision > 17) {
            fprintf(stderr, "sap gen: --precision needs an integer in 1..17\n");
            return 2;
        }
        return 0;
    default: return 2;
    }
}

int sap_cmd_gen(int argc, char **argv)
{
    static const struct option own[] = {{"symmetric", no_argument, NULL, OPT_SYMMETRIC},
                                        {"rhs", required_argument, NULL, OPT_RHS},
                                        {"solution", required_argument, NULL, OPT_SOLUTION},
                                        {"seed", required_argument, NULL, OPT_SEED},
                                        {"precision", required_argument, NULL, OPT_PRECISION},
                                        {NULL, 0, NULL, 0}};
    gen_args g = {NULL, NULL, 1, 17, 0};
    const sap_tool_command cmd = {"gen", SAP_ARG_OUTPUT | SAP_ARG_XSTAR | SAP_ARG_JSON, own, "generator spec", 1, usage, take, &g};
    sap_tool_args args;
    int rc = sap_tool_parse_args(&cmd, argc, argv, &args);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = sap_tool_need_positional(&cmd, &args))) return rc;
    const char *spec = args.positional[0], *out = args.output, *rhs = g.rhs, *sol = g.sol;
    const long long seed = g.seed, precision = g.precision;
    const int symmetric = g.symmetric;
    const sap_xstar kind = args.xstar;
    if (!out) {
        fprintf(stderr, "sap gen: no output file given (-o FILE)\n");
        fprintf(stderr, "usage: sap gen SPEC -o FILE.mtx[.gz] (sap gen --help for details)\n");
        return 2;
    }
    if (strncmp(spec, "gen:", 4) != 0) {
        fprintf(stderr, "sap gen: '%s' is not a generator spec (they start with gen:)\n", spec);
        return 2;
    }
    sap_context *ctx = sap_tool_context("gen", "cpu", 0, 0);
    if (!ctx) return 1;
    sap_csr *A = NULL;
    double *x = NULL, *b = NULL;
    sap_status st = sap_gen_spec(ctx, spec, &A);
    if (st < 0) {
        rc = sap_tool_fail("gen", ctx, st);
        goto done;
    }
    sap_mm_write_options wo;
    sap_mm_write_options_init(&wo);
    wo.symmetry = symmetric ? SAP_SYMMETRIC : SAP_GENERAL;
    wo.precision = (int)precision;
    char comment[512];
    snprintf(comment, sizeof(comment), "generated by sap %s: %s", sap_version_string(), spec);
    wo.comment = comment;
    st = sap_mm_write_csr(A, out, &wo);
    if (st < 0) {
        rc = sap_tool_fail("gen", ctx, st);
        goto done;
    }
    if (rhs || sol) {
        x = malloc(sizeof(double) * (size_t)(A->ncols ? A->ncols : 1));
        b = calloc((size_t)(A->nrows ? A->nrows : 1), sizeof(double));
        if (!x || !b) {
            fprintf(stderr, "sap gen: out of memory\n");
            rc = 1;
            goto done;
        }
        st = sap_gen_xstar(ctx, A->ncols, kind, (uint64_t)seed, x);
        if (st >= 0) st = sap_csr_spmv(A, 1.0, x, 0.0, b);
        if (st < 0) {
            rc = sap_tool_fail("gen", ctx, st);
            goto done;
        }
        if (sol && (rc = write_vector(ctx, x, A->ncols, sol, (int)precision))) goto done;
        if (rhs && (rc = write_vector(ctx, b, A->nrows, rhs, (int)precision))) goto done;
    }
    if (args.json) {
        cJSON *extra = cJSON_CreateObject();
        if (extra) {
            cJSON_AddStringToObject(extra, "spec", spec);
            if (rhs) cJSON_AddStringToObject(extra, "rhs", rhs);
            if (sol) cJSON_AddStringToObject(extra, "solution", sol);
        }
        if (!extra || sap_tool_json_wrote("gen", out, A, extra)) {
            fprintf(stderr, "sap gen: cannot print the JSON outcome\n");
            rc = 1;
        }
    } else {
        printf("wrote %s: %lld x %lld, %lld nonzeros\n", out, (long long)A->nrows, (long long)A->ncols,
               (long long)A->nnz);
    }
done:
    free(x);
    free(b);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    return rc;
}
