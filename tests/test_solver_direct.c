/* test_solver_direct.c -- the direct fallback and the time-boxed attempts of sap_solver:
 * direct-host forced (SuiteSparse: UMFPACK for a nonsymmetric matrix, CHOLMOD for an SPD
 * one; refactor and several right-hand sides), direct-cudss without cuDSS or without a
 * GPU (the message, and the chain going on to direct-host), AUTO on a circuit-like matrix
 * whose band after CM is too wide for SaP (a few dense rows and columns: supply nets),
 * which falls back to the sparse direct solve instead of failing, a slow attempt cut off
 * by its time budget, and a singular matrix reported by the direct factorization, not
 * looped on.  GPU part: direct-cudss on a cuda context against direct-host (when cuDSS is
 * loadable; otherwise the message is checked). */
#include "testing.h"

#include "solver/solver_internal.h"

#define SAP_TEST_HAS_GPU_PART 1

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A circuit-like matrix: an nx x nx grid (5-point, a nonsymmetric convection term when
 * nonsym), nd "supply nets" each coupled to every stride-th unknown in both directions,
 * the diagonal dom x the off-diagonal row sum (1.05: weakly dominant; below 1 Jacobi
 * iterations fail).  CM on
 * A + A^T leaves a band of about N / 2 (the nets touch everything); a minimum-degree
 * ordering puts the nets last and the factors stay sparse. */
static sap_csr *circuit(sap_context *ctx, sap_int nx, int nd, sap_int stride, int nonsym, double dom)
{
    const sap_int n = nx * nx + nd;
    sap_coo *C = NULL;
    sap_csr *A = NULL;
    if (sap_coo_create(ctx, n, n, 6 * n + 4 * nd * (nx * nx / stride + 1), &C) != SAP_OK) return NULL;
    double *rowsum = calloc((size_t)n, sizeof(double));
#define PUT(i, j, v)                                                                                               \
    do {                                                                                                           \
        C->row[C->nnz] = (i), C->col[C->nnz] = (j), C->val[C->nnz] = (v), C->nnz++;                                \
        rowsum[i] += fabs(v);                                                                                      \
    } while (0)
    for (sap_int y = 0; y < nx; y++)
        for (sap_int x = 0; x < nx; x++) {
            const sap_int i = y * nx + x;
            const double c = nonsym ? 0.4 : 0.0;
            if (x > 0) PUT(i, i - 1, -1.0 - c);
            if (x + 1 < nx) PUT(i, i + 1, -1.0 + c);
            if (y > 0) PUT(i, i - nx, -1.0);
            if (y + 1 < nx) PUT(i, i + nx, -1.0);
        }
    for (int d = 0; d < nd; d++) {
        const sap_int net = nx * nx + d;
        for (sap_int i = d; i < nx * nx; i += stride) {
            PUT(i, net, -0.5);
            PUT(net, i, nonsym ? -0.3 : -0.5);
        }
    }
    for (sap_int i = 0; i < n; i++) PUT(i, i, dom * rowsum[i] + 1e-3);
#undef PUT
    sap_csr_from_coo(C, &A);
    sap_coo_destroy(C);
    free(rowsum);
    return A;
}

typedef struct run {
    sap_status st;
    sap_solver_stats ss;
    double res, seconds;
    char msg[512];
} run;

/* Solves A x = A x* with opt (NULL: defaults) and k right-hand sides; inconsistent: b = 1
 * with b[1] = 2 instead (no solution when rows 0 and 1 of A are equal). */
static run solve_b(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt, int k, int inconsistent)
{
    run r;
    memset(&r, 0, sizeof(r));
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)(n * k)), *x = calloc((size_t)(n * k), sizeof(double));
    double *xs = malloc(sizeof(double) * (size_t)n);
    for (int j = 0; j < k; j++) {
        sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, (uint64_t)(1 + j), xs);
        sap_csr_spmv(A, 1.0, xs, 0.0, b + j * n);
        if (inconsistent)
            for (sap_int i = 0; i < n; i++) b[i + j * n] = i == 1 ? 2.0 : 1.0;
    }
    sap_solver *S = NULL;
    const double t0 = sap_test_wtime();
    r.st = sap_solver_create(ctx, A, opt, &S);
    if (r.st >= 0) r.st = sap_solver_solve_many(S, k, b, n, x, n);
    r.seconds = sap_test_wtime() - t0;
    snprintf(r.msg, sizeof(r.msg), "%s", sap_context_last_error(ctx));
    if (S) sap_solver_get_stats(S, &r.ss);
    for (int j = 0; j < k; j++) {
        const double rj = sap_test_rel_residual(A, x + j * n, b + j * n);
        if (!(rj <= r.res)) r.res = rj;
    }
    sap_solver_destroy(S);
    free(b);
    free(x);
    free(xs);
    return r;
}

static run solve(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt, int k)
{
    return solve_b(ctx, A, opt, k, 0);
}

static void print_run(const char *what, const run *r)
{
    printf("  %-28s %s, %s, res %.2e, %.3f s | %s\n", what, sap_status_name(r->st),
           sap_solver_method_name(r->ss.method), r->res, r->seconds, r->ss.reason);
    for (int i = 0; i < r->ss.ntries; i++)
        printf("      try %d: %-12s %-24s %.3fs pred %.3gs budget %.3gs  %s\n", i,
               sap_solver_method_name(r->ss.tried[i].method), sap_status_name(r->ss.tried[i].status),
               r->ss.tried[i].time, r->ss.tried[i].predicted, r->ss.tried[i].budget, r->ss.tried[i].note);
    if (r->st != SAP_OK) printf("      message: %s\n", r->msg);
}

static int tried_index(const run *r, sap_solver_method m)
{
    for (int i = 0; i < r->ss.ntries; i++)
        if (r->ss.tried[i].method == m) return i;
    return -1;
}

static void opts(sap_solver_options *o, const char *method, const char *fallback)
{
    sap_solver_options_init(o);
    if (method) CHECK(sap_solver_options_set(o, "method", method) == SAP_OK);
    if (fallback) CHECK(sap_solver_options_set(o, "fallback", fallback) == SAP_OK);
}

static int have_host; /* this build has SuiteSparse */

/* ---- direct-host forced --------------------------------------------------------------- */

static void test_direct_host(sap_context *ctx)
{
    printf("direct-host forced\n");
    sap_solver_options o;
    opts(&o, "direct-host", "0");
    sap_csr *A = circuit(ctx, 30, 3, 7, 1, 1.05), *P = NULL;
    CHECK(A != NULL);
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 40, 40, &P));
    run r = solve(ctx, A, &o, 1);
    print_run("circuit nonsym", &r);
    if (r.st == SAP_ERR_NOT_COMPILED) {
        /* a build without SuiteSparse says so */
        CHECK_MSG(strstr(r.msg, "not built with SuiteSparse") != NULL, "message: %s", r.msg);
        have_host = 0;
        sap_csr_destroy(A);
        sap_csr_destroy(P);
        return;
    }
    have_host = 1;
    CHECK_MSG(r.st == SAP_OK && r.res <= 1e-10, "%s res %.3g", sap_status_name(r.st), r.res);
    CHECK(r.ss.method == SAP_METHOD_DIRECT_HOST && r.ss.ntries == 1 && strstr(r.ss.reason, "UMFPACK") != NULL);
    CHECK(r.ss.iterations >= 1 && r.ss.iterations <= 6);
    CHECK(r.ss.memory_estimate > 0);
    /* several right-hand sides through one solve */
    r = solve(ctx, A, &o, 3);
    print_run("circuit nonsym, 3 rhs", &r);
    CHECK(r.st == SAP_OK && r.res <= 1e-10);
    /* SPD: Cholesky */
    r = solve(ctx, P, &o, 1);
    print_run("poisson2d 40 (SPD)", &r);
    CHECK(r.st == SAP_OK && r.res <= 1e-10 && strstr(r.ss.reason, "CHOLMOD") != NULL);
    /* refactor: new values, the same pattern */
    {
        sap_solver *S = NULL;
        const sap_int n = A->nrows;
        double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
        double *v = malloc(sizeof(double) * (size_t)A->nnz);
        for (sap_int i = 0; i < n; i++) b[i] = 1.0 + (double)(i % 5);
        CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
        CHECK_OK(ctx, sap_solver_solve(S, b, x));
        for (sap_int p = 0; p < A->nnz; p++) v[p] = A->val[p] * (A->colind[p] == 0 ? 1.0 : 1.5);
        for (sap_int i = 0; i < n; i++)
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                if (A->colind[p] == i) v[p] = A->val[p] * 2.0;
        CHECK_OK(ctx, sap_solver_refactor(S, v));
        CHECK_OK(ctx, sap_solver_solve(S, b, x));
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_csr_copy(A, &B));
        memcpy(B->val, v, sizeof(double) * (size_t)A->nnz);
        const double res = sap_test_rel_residual(B, x, b);
        printf("  refactor: res %.2e\n", res);
        CHECK(res <= 1e-10);
        sap_csr_destroy(B);
        sap_solver_destroy(S);
        free(b);
        free(x);
        free(v);
    }
    sap_csr_destroy(A);
    sap_csr_destroy(P);
}

/* ---- direct-cudss without cuDSS (or without a GPU) -------------------------------------- */

static void test_no_cudss(sap_context *ctx)
{
    printf("direct-cudss on a cpu context\n");
    sap_csr *A = circuit(ctx, 20, 2, 5, 1, 1.05);
    sap_solver_options o;
    opts(&o, "direct-cudss", "0");
    run r = solve(ctx, A, &o, 1);
    print_run("direct-cudss, fallback=0", &r);
    CHECK(r.st == SAP_ERR_UNSUPPORTED && strstr(r.msg, "cuDSS") != NULL);
    CHECK(r.ss.ntries == 1 && r.ss.tried[0].method == SAP_METHOD_DIRECT_CUDSS && strstr(r.ss.tried[0].note, "cuDSS"));
    /* with the fallback: the host direct solver takes over */
    opts(&o, "direct-cudss", NULL);
    r = solve(ctx, A, &o, 1);
    print_run("direct-cudss, fallback=1", &r);
    CHECK(r.st == SAP_OK && r.res <= 1e-10);
    CHECK(r.ss.method == (have_host ? SAP_METHOD_DIRECT_HOST : SAP_METHOD_JACOBI));
    CHECK(r.ss.tried[0].method == SAP_METHOD_DIRECT_CUDSS && r.ss.tried[0].status == SAP_ERR_UNSUPPORTED);
    /* AUTO on a cpu context never lists direct-cudss */
    opts(&o, NULL, NULL);
    r = solve(ctx, A, &o, 1);
    CHECK(tried_index(&r, SAP_METHOD_DIRECT_CUDSS) < 0);
    sap_csr_destroy(A);
}

/* ---- AUTO: the band after CM too wide for SaP -> the direct fallback --------------------- */

static void test_wide_band_fallback(sap_context *ctx)
{
    printf("AUTO on a circuit-like matrix (wide band after CM, not diagonally dominant)\n");
    sap_csr *A = circuit(ctx, 70, 3, 3, 1, 0.3);
    sap_solver_options o;
    opts(&o, NULL, NULL);
    CHECK_OK(ctx, sap_solver_options_set(&o, "host_direct", "0"));
    run r = solve(ctx, A, &o, 1);
    printf("  N %lld, nnz %lld, K_cm %lld\n", (long long)A->nrows, (long long)A->nnz, (long long)r.ss.K_cm);
    print_run("auto", &r);
    CHECK_MSG(r.ss.K_cm > A->nrows / 4, "K_cm %lld", (long long)r.ss.K_cm);
    CHECK_MSG(r.st == SAP_OK && r.res <= 1e-10, "%s res %.3g", sap_status_name(r.st), r.res);
    if (have_host) {
        CHECK(r.ss.method == SAP_METHOD_DIRECT_HOST);
        /* the SaP attempts before it were skipped on their predicted setup (the budget from
         * the direct method's prediction); Jacobi failed; none of them ran for long */
        const int i = tried_index(&r, SAP_METHOD_DIRECT_HOST);
        CHECK(i >= 1 && r.ss.tried[i].predicted > 0);
        for (int j = 0; j < i; j++)
            CHECK_MSG(r.ss.tried[j].status < 0 || r.ss.tried[j].status == SAP_WARN_NOT_CONVERGED ||
                          r.ss.tried[j].status == SAP_WARN_STAGNATED,
                      "try %d: %s", j, sap_status_name(r.ss.tried[j].status));
        CHECK(r.ss.tried[0].method == SAP_METHOD_SAPD && r.ss.tried[0].status == SAP_ERR_TOO_LARGE);
        /* skipped on its prediction: beyond its budget, or beyond SV_LEARN_MARGIN times the
         * direct method's prediction (solver_attempt.c) */
        CHECK_MSG(strstr(r.ss.tried[0].note, "skip") != NULL &&
                      ((r.ss.tried[0].budget > 0 && r.ss.tried[0].predicted > r.ss.tried[0].budget &&
                        strstr(r.ss.tried[0].note, "budget") != NULL) ||
                       (r.ss.tried[0].predicted > SV_LEARN_MARGIN * r.ss.tried[i].predicted &&
                        strstr(r.ss.tried[0].note, "direct-host") != NULL)),
                  "%s", r.ss.tried[0].note);
    }
    /* without a budget the old behaviour: SaP-D or SaP-C on the (narrowed) band */
    sap_csr_destroy(A);
}

/* ---- a slow attempt cut off by its budget -------------------------------------------------- */

static void test_budget_cutoff(sap_context *ctx)
{
    printf("a slow attempt cut off by its time budget\n");
    /* SaP-D reduced to its diagonal (drop=0: K = 0) on 2D Poisson: hundreds of CG
     * iterations, far more than 0.002 s */
    sap_csr *P = NULL, *Q = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 150, 150, &P));
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 30, 30, &Q));
    sap_solver_options o;
    opts(&o, "sap-d", NULL);
    CHECK_OK(ctx, sap_solver_options_set(&o, "drop", "0"));
    CHECK_OK(ctx, sap_solver_options_set(&o, "time_budget", "0.002"));
    CHECK_OK(ctx, sap_solver_options_set(&o, "maxit", "1000000"));
    run r = solve(ctx, P, &o, 1);
    print_run("sap-d K=0, budget 0.002 s", &r);
    CHECK_MSG(r.st == SAP_OK && r.res <= 1e-10, "%s res %.3g", sap_status_name(r.st), r.res);
    CHECK(r.ss.ntries >= 2 && r.ss.tried[0].method == SAP_METHOD_SAPD);
    CHECK_MSG(r.ss.tried[0].status == SAP_WARN_NOT_CONVERGED || r.ss.tried[0].status == SAP_WARN_STAGNATED, "%s",
              sap_status_name(r.ss.tried[0].status));
    CHECK(r.ss.tried[0].budget == 0.002);
    CHECK(strstr(r.ss.tried[0].note, "budget") != NULL);
    /* stopped at its first steps after the budget ran out (its setup cannot be
     * interrupted): far from the hundreds of iterations it needs */
    CHECK_MSG(r.ss.tried[0].iterations < 100, "%.4g iterations", r.ss.tried[0].iterations);
    CHECK(r.ss.method != SAP_METHOD_SAPD);
    /* time_budget=off: a smaller system converges in the attempt (no budget, no cut) */
    CHECK_OK(ctx, sap_solver_options_set(&o, "time_budget", "off"));
    r = solve(ctx, Q, &o, 1);
    print_run("sap-d K=0 N=900, no budget", &r);
    CHECK(r.st == SAP_OK && r.ss.method == SAP_METHOD_SAPD && r.ss.tried[0].budget == 0);
    /* bad values */
    CHECK(sap_solver_options_set(&o, "time_budget", "-5") == SAP_ERR_INVALID);
    CHECK(sap_solver_options_set(&o, "time_budget", "x") == SAP_ERR_INVALID);
    sap_csr_destroy(P);
    sap_csr_destroy(Q);
}

/* ---- a singular matrix: reported by the direct factorization, not looped on -------------- */

static void test_singular(sap_context *ctx)
{
    printf("a singular matrix\n");
    /* structurally nonsingular (a full diagonal), numerically singular: rows 0 and 1 equal */
    const sap_int n = 400;
    sap_coo *C = NULL;
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_coo_create(ctx, n, n, 3 * n + 4, &C));
    for (sap_int i = 0; i < n; i++) {
        C->row[C->nnz] = i, C->col[C->nnz] = i, C->val[C->nnz] = i < 2 ? 1.0 : 4.0, C->nnz++;
        if (i >= 2 && i + 1 < n) C->row[C->nnz] = i, C->col[C->nnz] = i + 1, C->val[C->nnz] = -1.0, C->nnz++;
        if (i >= 3) C->row[C->nnz] = i, C->col[C->nnz] = i - 1, C->val[C->nnz] = -1.0, C->nnz++;
    }
    C->row[C->nnz] = 0, C->col[C->nnz] = 1, C->val[C->nnz] = 1.0, C->nnz++;
    C->row[C->nnz] = 1, C->col[C->nnz] = 0, C->val[C->nnz] = 1.0, C->nnz++;
    CHECK_OK(ctx, sap_csr_from_coo(C, &A));
    sap_coo_destroy(C);
    sap_solver_options o;
    opts(&o, NULL, NULL);
    CHECK_OK(ctx, sap_solver_options_set(&o, "host_direct", "0"));
    run r = solve_b(ctx, A, &o, 1, 1);
    print_run("auto", &r);
    if (have_host) {
        CHECK_MSG(r.st == SAP_ERR_SINGULAR && strstr(r.msg, "singular") != NULL, "%s: %s", sap_status_name(r.st),
                  r.msg);
        /* the direct method said so, with the solver's message */
        const int i = tried_index(&r, SAP_METHOD_DIRECT_HOST);
        CHECK(i == r.ss.ntries - 1 && r.ss.tried[i].status == SAP_ERR_SINGULAR);
        /* forced, without a fallback */
        opts(&o, "direct-host", "0");
        r = solve_b(ctx, A, &o, 1, 1);
        CHECK(r.st == SAP_ERR_SINGULAR && r.ss.ntries == 1);
    } else {
        CHECK(r.st < 0 || r.res > 1e-10 || r.st != SAP_OK);
    }
    sap_csr_destroy(A);
}

static int cpu_part(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) return 1;
    test_direct_host(ctx);
    test_no_cudss(ctx);
    test_wide_band_fallback(ctx);
    test_budget_cutoff(ctx);
    test_singular(ctx);
    sap_context_destroy(ctx);
    return 0;
}

/* ---- GPU: direct-cudss against direct-host ------------------------------------------------ */

static int gpu_part(void)
{
    int dryrun = 0;
    sap_context *G = NULL;
    int rc = sap_test_gpu_context(sap_test_name(), 1, &G, &dryrun);
    if (rc) return rc;
    sap_context *H = sap_test_context(SAP_BACKEND_CPU);
    if (!H) return 1;
    sap_csr *A = circuit(H, 120, 3, 3, 1, 1.05), *P = NULL;
    CHECK_OK(H, sap_gen_poisson2d(H, 150, 150, &P));
    const sap_csr *mats[2] = {A, P};
    const char *names[2] = {"circuit nonsym 120^2+3", "poisson2d 150 (SPD)"};
    for (int k = 0; k < 2; k++) {
        sap_solver_options o;
        opts(&o, "direct-host", "0");
        run h = solve(H, mats[k], &o, 1);
        print_run(names[k], &h);
        opts(&o, "direct-cudss", "0");
        run g = solve(G, mats[k], &o, 2);
        print_run(names[k], &g);
        if (g.st == SAP_ERR_UNSUPPORTED) {
            /* no cuDSS here (or a dry run on a cpu context): the reason is given */
            printf("  direct-cudss not usable: %s\n", g.msg);
            CHECK(strstr(g.msg, "cuDSS") != NULL);
            continue;
        }
        CHECK_MSG(g.st == SAP_OK && g.res <= 1e-10, "%s res %.3g", sap_status_name(g.st), g.res);
        CHECK(g.ss.method == SAP_METHOD_DIRECT_CUDSS && strstr(g.ss.reason, "cuDSS") != NULL);
        if (h.st == SAP_OK) printf("  time: direct-host %.3f s, direct-cudss %.3f s (2 rhs)\n", h.seconds, g.seconds);
        /* AUTO on the GPU: a direct fallback, if one is needed, is cuDSS */
        opts(&o, NULL, NULL);
        run a = solve(G, mats[k], &o, 1);
        print_run("auto (cuda)", &a);
        CHECK(a.st == SAP_OK && a.res <= 1e-10);
        CHECK(tried_index(&a, SAP_METHOD_DIRECT_HOST) < 0 || tried_index(&a, SAP_METHOD_DIRECT_CUDSS) >= 0);
    }
    sap_csr_destroy(A);
    sap_csr_destroy(P);
    sap_context_destroy(H);
    sap_context_destroy(G);
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_solver_direct", cpu_part, gpu_part); }
