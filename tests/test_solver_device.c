/* test_solver_device.c -- the device-pointer entry points of sap_solver
 * (sap_solver_create_device, _solve_device, _solve_many_device, _refactor_device).
 *   cpu: a cpu context and host pointers are refused with a clear message; the device
 *        path's logic (the Krylov iteration in the original order with the reorderings
 *        inside the preconditioner, the refinement, the chain, refactor, the host route of
 *        band-pivot) runs on the cpu backend through the internal entry point without the
 *        pointer check, against sap_solver_solve on the same matrices.
 *   cuda: the CSR, b and x in device memory: x matches the host path, no byte of A went
 *        host -> device, nothing went up during the solves, and every byte that went up
 *        is accounted for as the preconditioner's data or the permutations. */
#include "testing.h"

#include "device/device.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SAP_TEST_HAS_GPU_PART 1

/* solver_device.c (internal): check = 0 takes host arrays on any backend */
sap_status sap__solver_create_dev(sap_context *ctx, sap_int n, sap_int nnz, const sap_int *rowptr,
                                  const sap_int *colind, const double *val, const sap_solver_options *opt, int check,
                                  sap_solver **out);

static double max_rel_diff(const double *x, const double *y, sap_int n)
{
    double d = 0, m = 0;
    for (sap_int i = 0; i < n; i++) {
        d = fmax(d, fabs(x[i] - y[i]));
        m = fmax(m, fabs(y[i]));
    }
    return m > 0 ? d / m : d;
}

static void rhs(sap_int n, double *b)
{
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + 0.5 * sin(0.37 * (double)i);
}

/* The matrices: SPD (CG, no reordering), nonsymmetric with hidden permutations (DB + CM),
 * and SaP-D with the third stage (P = 4). */
typedef struct dev_case {
    const char *what;
    sap_csr *A;
    sap_solver_options opt;
} dev_case;

/* c->A made (status st) with method m and P partitions (0: auto); 1 when made. */
static int set_case(dev_case *c, sap_status st, const char *what, sap_solver_method m, sap_int P)
{
    if (st < 0) return 0;
    c->what = what;
    sap_solver_options_init(&c->opt);
    c->opt.method = m;
    c->opt.partitions = P;
    c->opt.third_stage = P > 1 ? 1 : -1;
    return 1;
}

static int make_cases(sap_context *ctx, dev_case *c)
{
    int k = 0;
    k += set_case(&c[k], sap_gen_poisson2d(ctx, 40, 40, &c[k].A), "poisson2d 40x40, sap-d (CG)", SAP_METHOD_SAPD, 0);
    k += set_case(&c[k], sap_gen_synthetic(ctx, 1500, 8, 1.2, 0.6, 7, &c[k].A, NULL, NULL),
                  "synthetic 1500 (DB + CM)", SAP_METHOD_SAPD, 0);
    k += set_case(&c[k], sap_gen_synthetic(ctx, 2000, 6, 1.5, 0.8, 11, &c[k].A, NULL, NULL),
                  "synthetic 2000, sap-d P = 4 (third stage)", SAP_METHOD_SAPD, 4);
    return k;
}

static void free_cases(dev_case *c, int k)
{
    for (int i = 0; i < k; i++) sap_csr_destroy(c[i].A);
}

/* ---- cpu ------------------------------------------------------------------------------------- */

static void test_refusals(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 5, 5, &A));
    sap_solver *S = (sap_solver *)(uintptr_t)1;
    CHECK_STATUS(ctx, sap_solver_create_device(ctx, A->nrows, A->nnz, A->rowptr, A->colind, A->val, NULL, &S),
                 SAP_ERR_INVALID);
    CHECK(S == NULL);
    CHECK_MSG(strstr(sap_context_last_error(ctx), "cuda context") != NULL, "message: %s", sap_context_last_error(ctx));
    CHECK_STATUS(ctx, sap_solver_create_device(ctx, A->nrows, A->nnz, A->rowptr, A->colind, A->val, NULL, NULL),
                 SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_solver_create_device(ctx, -1, A->nnz, A->rowptr, A->colind, A->val, NULL, &S),
                 SAP_ERR_INVALID);
    /* a host-made solver has no device entry */
    sap_solver *H = NULL;
    CHECK_OK(ctx, sap_solver_create(ctx, A, NULL, &H));
    double b[25], x[25];
    rhs(25, b);
    memset(x, 0, sizeof(x));
    CHECK_STATUS(ctx, sap_solver_solve_device(H, b, x), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_solver_refactor_device(H, A->val), SAP_ERR_INVALID);
    sap_solver_device_stats ds;
    CHECK_OK(ctx, sap_solver_get_device_stats(H, &ds));
    CHECK(ds.device_arrays == 0);
    CHECK_STATUS(ctx, sap_solver_solve_device(NULL, b, x), SAP_ERR_INVALID);
    sap_solver_destroy(H);
    /* a bad row pointer is caught before anything is built */
    sap_int rp[26];
    memcpy(rp, A->rowptr, sizeof(rp));
    rp[25] = A->nnz + 1;
    CHECK_STATUS(ctx, sap__solver_create_dev(ctx, 25, A->nnz, rp, A->colind, A->val, NULL, 0, &S), SAP_ERR_INVALID);
    CHECK(S == NULL);
    sap_csr_destroy(A);
    sap_context_destroy(ctx);
}

/* The device logic on the cpu backend against sap_solver_solve. */
static void test_cpu_logic(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    dev_case c[4];
    int k = make_cases(ctx, c);
    CHECK(k == 3);
    for (int i = 0; i < k; i++) {
        const sap_csr *A = c[i].A;
        const sap_int n = A->nrows;
        double *b = malloc(sizeof(double) * (size_t)n * 2), *x = calloc((size_t)n * 2, sizeof(double));
        double *xr = calloc((size_t)n, sizeof(double));
        rhs(n, b);
        for (sap_int j = 0; j < n; j++) b[n + j] = cos(0.11 * (double)j);
        sap_solver *S = NULL, *R = NULL;
        CHECK_OK(ctx, sap__solver_create_dev(ctx, n, A->nnz, A->rowptr, A->colind, A->val, &c[i].opt, 0, &S));
        CHECK_OK(ctx, sap_solver_create(ctx, A, &c[i].opt, &R));
        if (!S || !R) {
            sap_solver_destroy(S);
            sap_solver_destroy(R);
            free(b), free(x), free(xr);
            continue;
        }
        CHECK_OK(ctx, sap_solver_solve_device(S, b, x));
        CHECK_OK(ctx, sap_solver_solve(R, b, xr));
        sap_solver_stats ss, rs;
        sap_solver_get_stats(S, &ss);
        sap_solver_get_stats(R, &rs);
        CHECK_MSG(ss.method == rs.method, "%s: method %s vs %s", c[i].what, sap_solver_method_name(ss.method),
                  sap_solver_method_name(rs.method));
        CHECK_MSG(sap_test_rel_residual(A, x, b) <= 1e-8, "%s: residual %g", c[i].what,
                  sap_test_rel_residual(A, x, b));
        CHECK_MSG(max_rel_diff(x, xr, n) < 1e-6, "%s: x differs from the host path by %g", c[i].what,
                  max_rel_diff(x, xr, n));
        sap_solver_device_stats ds;
        CHECK_OK(ctx, sap_solver_get_device_stats(S, &ds));
        CHECK(ds.device_arrays == 1);
        CHECK_MSG(ds.device_solves == 1 && ds.host_solves == 0, "%s: %lld device, %lld host solves (%s)", c[i].what,
                  (long long)ds.device_solves, (long long)ds.host_solves, ds.host_reason);
        CHECK(ds.a_h2d_bytes == 0);
        /* two columns at once, then new values (2 A: x / 2) */
        memset(x, 0, sizeof(double) * (size_t)n * 2);
        CHECK_OK(ctx, sap_solver_solve_many_device(S, 2, b, n, x, n));
        CHECK(sap_test_rel_residual(A, x + n, b + n) <= 1e-8);
        double *v2 = malloc(sizeof(double) * (size_t)(A->nnz > 0 ? A->nnz : 1));
        for (sap_int p = 0; p < A->nnz; p++) v2[p] = 2.0 * A->val[p];
        sap_status rf = sap_solver_refactor_device(S, v2);
        CHECK_MSG(rf >= 0, "%s: refactor %s", c[i].what, sap_status_name(rf));
        memset(x, 0, sizeof(double) * (size_t)n);
        CHECK_OK(ctx, sap_solver_solve_device(S, b, x));
        for (sap_int j = 0; j < n; j++) x[j] *= 2.0;
        CHECK_MSG(sap_test_rel_residual(A, x, b) <= 1e-8, "%s: residual after refactor %g", c[i].what,
                  sap_test_rel_residual(A, x, b));
        /* NaN in b: refused, x untouched */
        b[0] = NAN;
        CHECK_STATUS(ctx, sap_solver_solve_device(S, b, x), SAP_ERR_NONFINITE);
        v2[0] = NAN;
        CHECK_STATUS(ctx, sap_solver_refactor_device(S, v2), SAP_ERR_NONFINITE);
        free(v2);
        sap_solver_destroy(S);
        sap_solver_destroy(R);
        free(b), free(x), free(xr);
    }
    /* band-pivot has no device-vector solve: through the host, and the statistics say so */
    {
        const sap_csr *A = c[1].A;
        const sap_int n = A->nrows;
        sap_solver_options o;
        sap_solver_options_init(&o);
        o.method = SAP_METHOD_BAND_PIVOT;
        double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
        rhs(n, b);
        sap_solver *S = NULL;
        CHECK_OK(ctx, sap__solver_create_dev(ctx, n, A->nnz, A->rowptr, A->colind, A->val, &o, 0, &S));
        if (S) {
            CHECK_OK(ctx, sap_solver_solve_device(S, b, x));
            CHECK(sap_test_rel_residual(A, x, b) <= 1e-8);
            sap_solver_device_stats ds;
            sap_solver_get_device_stats(S, &ds);
            CHECK(ds.host_solves == 1 && ds.device_solves == 0);
            CHECK_MSG(strstr(ds.host_reason, "band-pivot") != NULL, "reason: %s", ds.host_reason);
        }
        sap_solver_destroy(S);
        free(b), free(x);
    }
    free_cases(c, k > 0 ? k : 0);
    sap_context_destroy(ctx);
}

static int cpu_part(void)
{
    test_refusals();
    test_cpu_logic();
    return 0;
}

/* ---- cuda ------------------------------------------------------------------------------------ */

/* Copies n bytes of host memory into new device memory of G. */
static void *to_device(sap_context *G, const void *h, size_t bytes)
{
    void *d = NULL;
    if (sap__ops(G)->mem_alloc(G, bytes ? bytes : 8, &d) != SAP_OK) return NULL;
    if (sap__ops(G)->mem_upload(G, d, h, bytes) != SAP_OK) {
        sap__ops(G)->mem_free(G, d);
        return NULL;
    }
    return d;
}

static int gpu_part(void)
{
    sap_context *G = NULL;
    int rc = sap_test_gpu_context(sap_test_name(), 0, &G, NULL);
    if (rc) return rc;
    sap_context *C = sap_test_context(SAP_BACKEND_CPU);
    dev_case c[4];
    int k = make_cases(C, c);
    CHECK(k == 3);
    for (int i = 0; i < k; i++) {
        const sap_csr *A = c[i].A;
        const sap_int n = A->nrows, nnz = A->nnz;
        double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
        double *xr = calloc((size_t)n, sizeof(double));
        rhs(n, b);
        sap_int *d_rp = to_device(G, A->rowptr, sizeof(sap_int) * (size_t)(n + 1));
        sap_int *d_ci = to_device(G, A->colind, sizeof(sap_int) * (size_t)nnz);
        double *d_v = to_device(G, A->val, sizeof(double) * (size_t)nnz);
        double *d_b = to_device(G, b, sizeof(double) * (size_t)n);
        double *d_x = to_device(G, x, sizeof(double) * (size_t)n);
        CHECK(d_rp && d_ci && d_v && d_b && d_x);
        /* host pointers on a cuda context: refused */
        sap_solver *S = NULL;
        CHECK_STATUS(G, sap_solver_create_device(G, n, nnz, A->rowptr, A->colind, A->val, &c[i].opt, &S),
                     SAP_ERR_INVALID);
        CHECK_MSG(strstr(sap_context_last_error(G), "host memory") != NULL ||
                      strstr(sap_context_last_error(G), "not memory CUDA knows") != NULL,
                  "message: %s", sap_context_last_error(G));
        sap_context_reset_transfer_stats(G);
        CHECK_OK(G, sap_solver_create_device(G, n, nnz, d_rp, d_ci, d_v, &c[i].opt, &S));
        if (!S) continue;
        CHECK_STATUS(G, sap_solver_solve_device(S, b, d_x), SAP_ERR_INVALID); /* a host b */
        CHECK_OK(G, sap_solver_solve_device(S, d_b, d_x));
        CHECK_OK(G, sap_solver_solve_device(S, d_b, d_x)); /* again, from the solution */
        sap_context_stats cs;
        sap_context_get_stats(G, &cs);
        sap_solver_device_stats ds;
        sap_solver_get_device_stats(S, &ds);
        sap__ops(G)->mem_download(G, x, d_x, sizeof(double) * (size_t)n);
        sap_solver *R = NULL;
        CHECK_OK(C, sap_solver_create(C, A, &c[i].opt, &R));
        CHECK_OK(C, sap_solver_solve(R, b, xr));
        printf("  %s: %lld device solves; A down %lld B in %.2e s, Krylov matrix %.2e s; up: setup %lld B (perm %lld), "
               "solves %lld B, A %lld B; context h2d %lld B\n",
               c[i].what, (long long)ds.device_solves, (long long)ds.download_bytes, ds.time_download, ds.time_matrix,
               (long long)ds.setup_h2d_bytes, (long long)ds.perm_h2d_bytes, (long long)ds.solve_h2d_bytes,
               (long long)ds.a_h2d_bytes, (long long)cs.h2d_bytes);
        CHECK_MSG(ds.device_solves == 2 && ds.host_solves == 0, "%s: host route: %s", c[i].what, ds.host_reason);
        CHECK(ds.download_bytes == (int64_t)sizeof(sap_int) * (n + 1 + nnz) + (int64_t)sizeof(double) * nnz);
        CHECK(ds.a_h2d_bytes == 0);
        CHECK(ds.solve_h2d_bytes == 0);
        /* everything that went up since the counters were reset: the preconditioner's data
         * and the permutations, never A */
        CHECK_MSG(cs.h2d_bytes == ds.setup_h2d_bytes, "%s: context h2d %lld B, accounted %lld B", c[i].what,
                  (long long)cs.h2d_bytes, (long long)ds.setup_h2d_bytes);
        CHECK_MSG(sap_test_rel_residual(A, x, b) <= 1e-8, "%s: residual %g", c[i].what, sap_test_rel_residual(A, x, b));
        CHECK_MSG(max_rel_diff(x, xr, n) < 1e-6, "%s: x differs from the host path by %g", c[i].what,
                  max_rel_diff(x, xr, n));
        /* refactor with 2 A from device memory */
        double *v2 = malloc(sizeof(double) * (size_t)(nnz > 0 ? nnz : 1));
        for (sap_int p = 0; p < nnz; p++) v2[p] = 2.0 * A->val[p];
        double *d_v2 = to_device(G, v2, sizeof(double) * (size_t)nnz);
        CHECK(sap_solver_refactor_device(S, d_v2) >= 0);
        memset(x, 0, sizeof(double) * (size_t)n);
        sap__ops(G)->mem_upload(G, d_x, x, sizeof(double) * (size_t)n);
        CHECK_OK(G, sap_solver_solve_device(S, d_b, d_x));
        sap__ops(G)->mem_download(G, x, d_x, sizeof(double) * (size_t)n);
        for (sap_int j = 0; j < n; j++) x[j] *= 2.0;
        CHECK_MSG(sap_test_rel_residual(A, x, b) <= 1e-8, "%s: residual after refactor %g", c[i].what,
                  sap_test_rel_residual(A, x, b));
        sap_solver_get_device_stats(S, &ds);
        CHECK(ds.a_h2d_bytes == 0 && ds.solve_h2d_bytes == 0);
        sap__ops(G)->mem_free(G, d_v2);
        free(v2);
        sap_solver_destroy(R);
        sap_solver_destroy(S);
        void *ps[] = {d_rp, d_ci, d_v, d_b, d_x};
        for (int j = 0; j < 5; j++)
            if (ps[j]) sap__ops(G)->mem_free(G, ps[j]);
        free(b), free(x), free(xr);
    }
    free_cases(c, k > 0 ? k : 0);
    sap_context_destroy(C);
    sap_context_destroy(G);
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_solver_device", cpu_part, gpu_part); }
