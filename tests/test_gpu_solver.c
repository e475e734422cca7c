/* test_gpu_solver.c -- the sparse SaP pipeline (sap_solver) on a cuda context against
 * the same solve on a cpu context: with the method and P forced the reorderings, the band
 * shapes and the solutions must agree; with the automatic choices both must converge to
 * the same x* (P may differ: the device partitions per SM, the host per thread); small
 * systems run on the host under host_small = 1 and on the device under 0; solve_many and
 * refactor on the device.  Exits 77 (skipped) without CUDA or without a device.
 * SAP_TEST_GPU_DRYRUN=1 runs the "gpu" side on a second cpu context. */
#include "testing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static sap_context *G, *C;
static int dryrun;

static double rel_err(const double *x, const double *y, sap_int n)
{
    double e = 0, s = 0;
    for (sap_int i = 0; i < n; i++) {
        e += (x[i] - y[i]) * (x[i] - y[i]);
        s += y[i] * y[i];
    }
    return s > 0 ? sqrt(e / s) : sqrt(e);
}

/* Solves A x = A x* on ctx; returns the status, x and the stats. */
static sap_status run(sap_context *ctx, const sap_csr *A, const sap_solver_options *o, const double *b, double *x,
                      sap_solver_stats *st)
{
    sap_solver *S = NULL;
    memset(x, 0, sizeof(double) * (size_t)A->nrows);
    sap_status s = sap_solver_create(ctx, A, o, &S);
    if (s >= 0) s = sap_solver_solve(S, b, x);
    memset(st, 0, sizeof(*st));
    sap_solver_get_stats(S, st);
    sap_solver_destroy(S);
    return s;
}

/* err_tol: the error against x* (real matrices are ill-conditioned: bcsstk14 has
 * cond ~ 1e10, so a residual of 1e-10 allows an error of ~1e-6 and more) */
static void compare(const char *label, const sap_csr *A, const sap_solver_options *o, int same_choices, double err_tol)
{
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *xs = malloc(sizeof(double) * (size_t)n);
    double *xg = malloc(sizeof(double) * (size_t)n), *xc = malloc(sizeof(double) * (size_t)n);
    sap_gen_xstar(C, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A, 1.0, xs, 0.0, b);
    sap_solver_stats sg, sc;
    sap_status g = run(G, A, o, b, xg, &sg), c = run(C, A, o, b, xc, &sc);
    CHECK_MSG(g == SAP_OK, "%s gpu: %s (%s)", label, sap_status_name(g), sap_context_last_error(G));
    CHECK_MSG(c == SAP_OK, "%s cpu: %s (%s)", label, sap_status_name(c), sap_context_last_error(C));
    CHECK_MSG(rel_err(xg, xs, n) < err_tol, "%s gpu: error %.3g", label, rel_err(xg, xs, n));
    CHECK_MSG(rel_err(xg, xc, n) < err_tol, "%s: gpu and cpu solutions differ by %.3g", label, rel_err(xg, xc, n));
    double rg = 0, bn = 0;
    {
        double *r = malloc(sizeof(double) * (size_t)n);
        memcpy(r, b, sizeof(double) * (size_t)n);
        sap_csr_spmv(A, -1.0, xg, 1.0, r);
        for (sap_int i = 0; i < n; i++) {
            rg += r[i] * r[i];
            bn += b[i] * b[i];
        }
        free(r);
    }
    CHECK_MSG(sqrt(rg / bn) <= 1.0001e-10, "%s gpu: residual %.3g", label, sqrt(rg / bn));
    CHECK_MSG(fabs(sg.relative_residual - sqrt(rg / bn)) <= 1e-2 * sqrt(rg / bn) + 1e-15, "%s gpu: stats residual %.3g",
              label, sg.relative_residual);
    CHECK_MSG(sg.K_cm == sc.K_cm && sg.K_original == sc.K_original && sg.db_used == sc.db_used, "%s: reorderings differ",
              label);
    CHECK_MSG(sg.on_host == (dryrun || o->host_small), "%s: on_host %d", label, sg.on_host);
    if (same_choices) {
        CHECK_MSG(sg.method == sc.method && sg.partitions == sc.partitions && sg.K_drop == sc.K_drop &&
                      sg.K_max == sc.K_max && sg.factor_precision == sc.factor_precision,
                  "%s: choices differ: %s P %lld K %lld/%lld vs %s P %lld K %lld/%lld", label,
                  sap_solver_method_name(sg.method), (long long)sg.partitions, (long long)sg.K_drop,
                  (long long)sg.K_max, sap_solver_method_name(sc.method), (long long)sc.partitions,
                  (long long)sc.K_drop, (long long)sc.K_max);
    }
    printf("  %-28s gpu %-10s P %4lld K %4lld it %6.2f setup %.4f solve %.4f | cpu %-10s P %4lld it %6.2f setup %.4f "
           "solve %.4f\n",
           label, sap_solver_method_name(sg.method), (long long)sg.partitions, (long long)sg.K_max, sg.iterations,
           sg.time_setup, sg.time_solve, sap_solver_method_name(sc.method), (long long)sc.partitions, sc.iterations,
           sc.time_setup, sc.time_solve);
    free(b);
    free(xs);
    free(xg);
    free(xc);
}

static void test_forced(void)
{
    printf("forced method and P\n");
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_synthetic(C, 60000, 40, 1.0, 0.3, 21, &A, NULL, NULL));
    const char *methods[] = {"sap-d", "sap-c", "band-lu", "jacobi"};
    for (int i = 0; i < 4; i++) {
        sap_solver_options o;
        sap_solver_options_init(&o);
        sap_solver_options_set(&o, "method", methods[i]);
        sap_solver_options_set(&o, "fallback", "0");
        sap_solver_options_set(&o, "host_small", "0");
        if (i < 2) sap_solver_options_set(&o, "partitions", "16");
        char label[64];
        snprintf(label, sizeof(label), "synthetic 60k %s", methods[i]);
        compare(label, A, &o, 1, 1e-7);
    }
    sap_csr_destroy(A);
}

static void test_auto(void)
{
    printf("automatic choices\n");
    sap_solver_options o;
    sap_solver_options_init(&o);
    o.host_small = 0;
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_synthetic(C, 100000, 60, 1.0, 0.2, 5, &A, NULL, NULL));
    compare("synthetic 100k auto", A, &o, 0, 1e-7);
    sap_csr_destroy(A);
    if (sap_test_have_matrices("real matrices on the gpu")) {
        const char *names[] = {"bcsstk14", "west0479", "cage8", "lns_3937"};
        for (int i = 0; i < 4; i++) {
            char path[1024];
            snprintf(path, sizeof(path), "%s/%s.mtx.gz", sap_test_matrix_dir(), names[i]);
            if (sap_matrix_load(C, path, NULL, &A) != SAP_OK) {
                CHECK_MSG(0, "load %s", path);
                continue;
            }
            compare(names[i], A, &o, 0, 1e-4);
            /* host_small on: a small system runs on the host inside the cuda context */
            sap_solver_options h;
            sap_solver_options_init(&h);
            char label[64];
            snprintf(label, sizeof(label), "%s host_small", names[i]);
            compare(label, A, &h, 1, 1e-4);
            sap_csr_destroy(A);
        }
    }
}

static void test_many_refactor(void)
{
    printf("solve_many and refactor on the device\n");
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_synthetic(C, 50000, 30, 1.0, 0.3, 8, &A, NULL, NULL));
    const sap_int n = A->nrows, k = 3;
    double *B = malloc(sizeof(double) * (size_t)(n * k)), *X = calloc((size_t)(n * k), sizeof(double));
    double *XS = malloc(sizeof(double) * (size_t)(n * k)), *v = malloc(sizeof(double) * (size_t)A->nnz);
    for (sap_int j = 0; j < k; j++) {
        sap_gen_xstar(C, n, j ? SAP_XSTAR_RANDOM : SAP_XSTAR_PARABOLA, (uint64_t)j, XS + j * n);
        sap_csr_spmv(A, 1.0, XS + j * n, 0.0, B + j * n);
    }
    sap_solver_options o;
    sap_solver_options_init(&o);
    o.host_small = 0;
    sap_solver *S = NULL;
    CHECK_OK(G, sap_solver_create(G, A, &o, &S));
    CHECK_OK(G, sap_solver_solve_many(S, k, B, n, X, n));
    for (sap_int j = 0; j < k; j++)
        CHECK_MSG(rel_err(X + j * n, XS + j * n, n) < 1e-6, "column %lld: error %.3g", (long long)j,
                  rel_err(X + j * n, XS + j * n, n));
    for (sap_int p = 0; p < A->nnz; p++) v[p] = 2.0 * A->val[p];
    sap_status rs = sap_solver_refactor(S, v);
    CHECK_MSG(rs == SAP_OK || rs == SAP_WARN_BOOSTED_PIVOTS, "refactor: %s", sap_status_name(rs));
    memset(X, 0, sizeof(double) * (size_t)n);
    CHECK_OK(G, sap_solver_solve(S, B, X));
    for (sap_int i = 0; i < n; i++) X[i] *= 2.0;
    CHECK_MSG(rel_err(X, XS, n) < 1e-6, "refactor 2A: error %.3g", rel_err(X, XS, n));
    sap_solver_stats st;
    sap_solver_get_stats(S, &st);
    CHECK(st.on_host == dryrun);
    sap_solver_destroy(S);
    free(B);
    free(X);
    free(XS);
    free(v);
    sap_csr_destroy(A);
}

int main(void)
{
    int rc = sap_test_gpu_context("test_gpu_solver", 1, &G, &dryrun);
    if (rc) return rc;
    C = sap_test_context(SAP_BACKEND_CPU);
    test_forced();
    test_auto();
    test_many_refactor();
    sap_context_destroy(C);
    sap_context_destroy(G);
    return sap_test_finish("test_gpu_solver");
}
