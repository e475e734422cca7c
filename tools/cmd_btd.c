/* cmd_btd.c -- `sap btd FILE|SPEC`: the block-tridiagonal direct solvers (sap_btd_*) on a
 * matrix whose pattern is block tridiagonal: factor once, solve right-hand sides one at a
 * time (as a shift-and-invert Arnoldi does) or as a block, print the profile. */
#define _POSIX_C_SOURCE 200809L
#include "args.h"
#include "json_out.h"
#include "sap_tool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sap btd FILE|SPEC [--algo auto|bcyclic|spike|reduced-spike] [--variant V] [--block K]\n"
            "               [--partitions P] [--inexact] [--nrhs N] [--solves S] [--backend cpu|cuda|auto]\n"
            "               [--threads N] [--xstar parabola|random|ones] [--json]\n\n"
            "Solves A x = b with a block-tridiagonal direct solver: b = A x* for each right-hand side,\n"
            "factorization once, then S solves of N right-hand sides each (S = 16, N = 1 is what a\n"
            "shift-and-invert Krylov-Schur with basis 16 does per restart).  Prints the block width,\n"
            "the algorithm and variant used, and the profile: factor, solve, communication.\n"
            "Under mpiexec (a build with MPI) the block rows are spread over the processes: spike\n"
            "(default there), reduced-spike and bcyclic.\n\n"
            "  --algo A         bcyclic (block cyclic reduction; auto), spike (exact reduced system),\n"
            "                   reduced-spike (truncated reduced system)\n"
            "  --variant V      BCYCLIC kernels: auto (factor + S solves measured on the device once\n"
            "                   per block size and S),\n"
            "                   getrs-batched, getrs, getri-batched, getri\n"
            "  --block K        block width (default: detected from the pattern)\n"
            "  --partitions P   Spike partitions (default 4, each >= 2 block rows)\n"
            "  --inexact        reduced-spike: refine x += M^-1 (b - A x) to 1e-12\n"
            "  --nrhs N         right-hand sides per solve (default 1)\n"
            "  --solves S       solves after the factorization (default 1)\n");
}

typedef struct btd_state {
    sap_btd_options opt;
    long long block, nrhs, solves;
} btd_state;

enum { OPT_ALGO = SAP_ARG_OWN, OPT_VARIANT, OPT_BLOCK, OPT_PARTS, OPT_INEXACT, OPT_NRHS, OPT_SOLVES };

static int take(void *state, int val, const char *arg)
{
    btd_state *s = state;
    long long v;
    switch (val) {
    case OPT_ALGO:
        if (sap_btd_algo_parse(arg, &s->opt.algo) == SAP_OK) return 0;
        fprintf(stderr, "sap btd: unknown --algo '%s' (auto, bcyclic, spike, reduced-spike)\n", arg);
        return 2;
    case OPT_VARIANT:
        if (sap_btd_variant_parse(arg, &s->opt.variant) == SAP_OK) return 0;
        fprintf(stderr, "sap btd: unknown --variant '%s' (auto, getrs-batched, getrs, getri-batched, getri)\n", arg);
        return 2;
    case OPT_INEXACT: s->opt.inexact = 1; return 0;
    default: break;
    }
    if (sap_tool_parse_int(arg, &v) || v > (1LL << 30)) {
        fprintf(stderr, "sap btd: bad value '%s' (a non-negative integer expected)\n", arg);
        return 2;
    }
    if (val == OPT_BLOCK) s->block = v;
    else if (val == OPT_PARTS) s->opt.partitions = (sap_int)v;
    else if (val == OPT_NRHS) s->nrhs = v;
    else s->solves = v, s->opt.solves = v > 1000000 ? 1000000 : (int)v;
    if ((val == OPT_NRHS || val == OPT_SOLVES) && v < 1) {
        fprintf(stderr, "sap btd: --nrhs and --solves must be >= 1\n");
        return 2;
    }
    return 0;
}

int sap_cmd_btd(int argc, char **argv)
{
    static const struct option own[] = {{"algo", required_argument, NULL, OPT_ALGO},
                                        {"variant", required_argument, NULL, OPT_VARIANT},
                                        {"block", required_argument, NULL, OPT_BLOCK},
                                        {"partitions", required_argument, NULL, OPT_PARTS},
                                        {"inexact", no_argument, NULL, OPT_INEXACT},
                                        {"nrhs", required_argument, NULL, OPT_NRHS},
                                        {"solves", required_argument, NULL, OPT_SOLVES},
                                        {0, 0, 0, 0}};
    btd_state s = {.block = 0, .nrhs = 1, .solves = 1};
    sap_btd_options_init(&s.opt);
    sap_tool_command cmd = {"btd",   SAP_ARG_THREADS | SAP_ARG_BACKEND | SAP_ARG_READ | SAP_ARG_XSTAR | SAP_ARG_JSON,
                            own,     "matrix", 1, usage, take, &s};
    sap_tool_args args;
    int rc = sap_tool_parse_args(&cmd, argc, argv, &args);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = sap_tool_need_positional(&cmd, &args))) return rc;
    const char *input = args.positional[0];
    /* under mpiexec: the block rows are spread over the processes */
    int nproc = 1, mpi = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE");
    if (mpi) nproc = sap_mpi_init(NULL, NULL);
    int rank = sap_mpi_rank();
    sap_context *ctx = sap_tool_context("btd", args.backend_name, (int)args.threads, 0);
    if (!ctx) {
        if (mpi) sap_mpi_finalize();
        return 1;
    }
    sap_csr *A = NULL;
    sap_btd *T = NULL;
    double *xs = NULL, *B = NULL, *X = NULL, *BL = NULL, *XL = NULL;
    sap_status st = sap_matrix_load(ctx, input, &args.read, &A);
    if (st < 0) goto fail;
    sap_tool_read_warning("btd", ctx, st);
    st = nproc > 1 ? sap_btd_create_csr_dist(ctx, NULL, A, (sap_int)s.block, &s.opt, &T)
                   : sap_btd_create_csr(ctx, A, (sap_int)s.block, &s.opt, &T);
    if (st < 0) goto fail;
    sap_int n = A->nrows, nrhs = (sap_int)s.nrhs, r0 = 0, nl = n;
    sap_btd_dist_range(T, &r0, &nl);
    BL = malloc((size_t)nl * (size_t)nrhs * sizeof(double));
    XL = malloc((size_t)nl * (size_t)nrhs * sizeof(double));
    xs = malloc((size_t)n * sizeof(double));
    B = malloc((size_t)n * (size_t)nrhs * sizeof(double));
    X = malloc((size_t)n * (size_t)nrhs * sizeof(double));
    if (!xs || !B || !X || !BL || !XL) {
        fprintf(stderr, "sap btd: out of memory for the right-hand sides\n");
        rc = 1;
        goto done;
    }
    if ((st = sap_gen_xstar(ctx, n, args.xstar, 1, xs)) < 0) goto fail;
    for (sap_int c = 0; c < nrhs; c++) {
        if ((st = sap_csr_spmv(A, 1.0, xs, 0.0, B + c * n)) < 0) goto fail;
        for (sap_int i = 0; i < n && c > 0; i++) B[c * n + i] *= 1.0 + 0.25 * (double)c;
    }
    st = sap_btd_factor(T);
    if (st < 0) goto fail;
    sap_btd_stats fs;
    sap_btd_get_stats(T, &fs);
    double tsolve = 0, tcomm = 0;
    int iters = 0;
    sap_status solve_st = SAP_OK;
    for (long long r = 0; r < s.solves; r++) {
        for (sap_int c = 0; c < nrhs; c++) memcpy(BL + c * nl, B + c * n + r0, (size_t)nl * sizeof(double));
        st = sap_btd_solve_many(T, nrhs, BL, nl, XL, nl);
        if (st < 0) goto fail;
        if (st > 0) solve_st = st;
        sap_btd_stats ss;
        sap_btd_get_stats(T, &ss);
        tsolve += ss.time_solve;
        tcomm += ss.time_comm;
        if (ss.iterations > iters) iters = ss.iterations;
    }
    for (sap_int c = 0; c < nrhs; c++)
        if ((st = sap_btd_gather(T, XL + c * nl, X + c * n)) < 0) goto fail;
    /* residual and error of every column (b_c = (1 + c/4) A x*) */
    double res = 0, err = 0, *r = malloc((size_t)n * sizeof(double));
    if (!r) {
        rc = 1;
        goto done;
    }
    for (sap_int c = 0; c < nrhs; c++) {
        double nb2 = 0, nr2 = 0, ne = 0, nx = 0, f = 1.0 + 0.25 * (double)c;
        sap_csr_spmv(A, 1.0, X + c * n, 0.0, r);
        for (sap_int i = 0; i < n; i++) {
            double bi = B[c * n + i], d = X[c * n + i] - f * xs[i];
            nb2 += bi * bi, nr2 += (bi - r[i]) * (bi - r[i]), ne += d * d, nx += f * f * xs[i] * xs[i];
        }
        double rr = sqrt(nr2 / (nb2 > 0 ? nb2 : 1)), ee = sqrt(ne / (nx > 0 ? nx : 1));
        if (rr > res) res = rr;
        if (ee > err) err = ee;
    }
    free(r);
    if (rank > 0) {
        rc = 0;
    } else if (args.json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "matrix", input);
        cJSON_AddNumberToObject(o, "n", (double)n);
        cJSON_AddNumberToObject(o, "k", (double)fs.k);
        cJSON_AddNumberToObject(o, "nb", (double)(n / fs.k));
        cJSON_AddStringToObject(o, "backend", sap_backend_name(sap_context_backend(ctx)));
        cJSON_AddStringToObject(o, "algo", sap_btd_algo_name(fs.algo));
        cJSON_AddStringToObject(o, "variant", sap_btd_variant_name(fs.variant));
        cJSON_AddNumberToObject(o, "partitions", (double)fs.partitions);
        cJSON_AddNumberToObject(o, "processes", nproc);
        cJSON_AddStringToObject(o, "transport", fs.transport ? fs.transport : "none");
        cJSON_AddNumberToObject(o, "time_calibrate", fs.time_calibrate);
        cJSON_AddNumberToObject(o, "time_factor", fs.time_factor);
        cJSON_AddNumberToObject(o, "time_solve", tsolve);
        cJSON_AddNumberToObject(o, "time_comm", tcomm);
        cJSON_AddNumberToObject(o, "solves", (double)s.solves);
        cJSON_AddNumberToObject(o, "nrhs", (double)nrhs);
        cJSON_AddNumberToObject(o, "residual", res);
        cJSON_AddNumberToObject(o, "error", err);
        cJSON_AddStringToObject(o, "status", sap_status_name(solve_st));
        rc = sap_tool_json_print(stdout, o, SAP_JSON_LINE) ? 1 : 0;
        cJSON_Delete(o);
    } else {
        printf("matrix        %s (%lld x %lld, %lld nonzeros)\n", input, (long long)n, (long long)n,
               (long long)A->nnz);
        printf("blocks        k = %lld%s, %lld block rows\n", (long long)fs.k, s.block ? "" : " (detected)",
               (long long)(n / fs.k));
        printf("backend       %s, %s\n", sap_backend_name(sap_context_backend(ctx)), sap_context_device_name(ctx));
        printf("algorithm     %s, variant %s%s", sap_btd_algo_name(fs.algo), sap_btd_variant_name(fs.variant),
               s.opt.variant == SAP_BTD_VARIANT_AUTO ? " (measured)" : "");
        if (fs.algo != SAP_BTD_BCYCLIC) printf(", %lld partitions", (long long)fs.partitions);
        if (s.opt.inexact && fs.algo == SAP_BTD_REDUCED_SPIKE) printf(", inexact (%d refinement steps)", iters);
        if (nproc > 1) printf("\nprocesses     %d (MPI, block rows %lld..%lld on rank 0; exchanges: %s)\n", nproc,
                              (long long)(r0 / fs.k), (long long)((r0 + nl) / fs.k - 1),
                              fs.transport ? fs.transport : "?");
        else printf("\nprocesses     1%s\n", sap_has_mpi() ? "" : " (built without MPI)");
        printf("rhs           %lld solve%s of %lld right-hand side%s, b = A x* (x* %s)\n", s.solves,
               s.solves == 1 ? "" : "s", (long long)nrhs, nrhs == 1 ? "" : "s", args.xstar_name);
        printf("status        %s\n", sap_status_name(solve_st));
        printf("residual      %.3e (max over columns of ||b - A x|| / ||b||)\n", res);
        printf("error         %.3e (||x - x*|| / ||x*||)\n", err);
        printf("profile       calibrate %.6f s, factor %.6f s, solve %.6f s (%.6f s per solve), comm %.6f s\n",
               fs.time_calibrate, fs.time_factor, tsolve, tsolve / (double)s.solves, tcomm);
        printf("time          factor + solves %.6f s\n", fs.time_factor + tsolve);
    }
    goto done;
fail:
    rc = sap_tool_fail("btd", ctx, st);
done:
    free(xs), free(B), free(X), free(BL), free(XL);
    sap_btd_destroy(T);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
    if (mpi) sap_mpi_finalize();
    return rc;
}
