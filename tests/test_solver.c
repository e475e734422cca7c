/* test_solver.c -- the sparse SaP pipeline (sap_solver), per backend (sap_test_main).
 * --backend cpu: generated synthetic matrices (a known band hidden by random
 * permutations), real matrices of the collection (SPD without DB, nonsymmetric with DB),
 * one and many right-hand sides, refactorization, every forced method, the fallback
 * chain, options by name, the memory limit, bad input and an out-of-memory sweep through
 * the allocator hook.
 * --backend cuda: sap_solver on a cuda context against the same solve on a cpu context:
 * with the method and P forced the reorderings, the band shapes and the solutions must
 * agree; with the automatic choices both must converge to the same x* (P may differ: the
 * device partitions per SM, the host per thread); small systems run on the host under
 * host_small = 1 and on the device under 0; solve_many and refactor on the device.  Exits
 * 77 (skipped) without CUDA or without a device.  SAP_TEST_GPU_DRYRUN=1 runs the "gpu"
 * side on a second cpu context. */
#define SAP_TEST_HAS_GPU_PART 1
#include "testing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double rel_error(const double *x, const double *xs, sap_int n)
{
    double e = 0, s = 0;
    for (sap_int i = 0; i < n; i++) {
        e += (x[i] - xs[i]) * (x[i] - xs[i]);
        s += xs[i] * xs[i];
    }
    return s > 0 ? sqrt(e / s) : sqrt(e);
}


static void print_stats(const char *label, const sap_solver_stats *st)
{
    printf("  %-22s %-10s P %3lld K %5lld/%5lld/%5lld/%5lld it %7.2f res %.2e spd %d db %d tries %d | %s\n", label,
           sap_solver_method_name(st->method), (long long)st->partitions, (long long)st->K_original,
           (long long)st->K_cm, (long long)st->K_drop, (long long)st->K_max, st->iterations, st->relative_residual,
           st->spd, st->db_used, st->ntries, st->reason);
    for (int i = 0; i < st->ntries; i++)
        printf("      try %d: %-10s %-24s %s\n", i, sap_solver_method_name(st->tried[i].method),
               sap_status_name(st->tried[i].status), st->tried[i].note);
}

/* Solves A x = A x* with the options given; checks the residual (tol 1e-10) and, when
 * err_tol > 0, the error against x*.  Returns the stats in *out (may be NULL). */
static sap_status solve_check(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt, double err_tol,
                              const char *label, sap_solver_stats *out)
{
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    double *xs = malloc(sizeof(double) * (size_t)n);
    sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A, 1.0, xs, 0.0, b);
    sap_solver *S = NULL;
    sap_solver_stats st;
    memset(&st, 0, sizeof(st));
    CHECK_OK(ctx, sap_solver_create(ctx, A, opt, &S));
    sap_status s = sap_solver_solve(S, b, x);
    CHECK_MSG(s == SAP_OK || s == SAP_WARN_BOOSTED_PIVOTS, "%s: %s (%s)", label, sap_status_name(s),
              sap_context_last_error(ctx));
    sap_solver_get_stats(S, &st);
    const double tol = opt ? opt->krylov.tol : 1e-10;
    double rr = sap_test_rel_residual(A, x, b);
    CHECK_MSG(rr <= tol * 1.0001, "%s: residual %.3g", label, rr);
    CHECK_MSG(fabs(rr - st.relative_residual) <= 1e-2 * rr + 1e-15, "%s: stats residual %.3g vs %.3g", label,
              st.relative_residual, rr);
    if (err_tol > 0) {
        double e = rel_error(x, xs, n);
        CHECK_MSG(e <= err_tol, "%s: error %.3g > %.3g", label, e, err_tol);
    }
    CHECK(st.method != SAP_METHOD_AUTO);
    CHECK(st.ntries >= 1);
    CHECK(st.n == n && st.nnz == A->nnz && st.nrhs == 1);
    CHECK(st.time_setup > 0 && st.time_solve > 0);
    print_stats(label, &st);
    if (out) *out = st;
    sap_solver_destroy(S);
    free(b);
    free(x);
    free(xs);
    return s;
}

static sap_csr *load(sap_context *ctx, const char *name)
{
    sap_csr *A = sap_test_load_matrix(ctx, name);
    CHECK_MSG(A != NULL, "load %s", name);
    return A;
}

/* ---- synthetic matrices: the hidden band is found again ------------------------------------ */

static void test_synthetic(sap_context *ctx)
{
    printf("synthetic\n");
    const sap_int n = 4000, K = 15;
    const double ds[] = {1.5, 0.6};
    for (int k = 0; k < 2; k++) {
        sap_csr *A = NULL;
        CHECK_OK(ctx, sap_gen_synthetic(ctx, n, K, ds[k], 0.4, 11 + (uint64_t)k, &A, NULL, NULL));
        sap_solver_stats st;
        char label[64];
        snprintf(label, sizeof(label), "synthetic d=%.1f", ds[k]);
        sap_solver_options so;
        sap_solver_options_init(&so);
        CHECK_OK(ctx, sap_solver_options_set(&so, "host_direct", "0")); /* the SaP path */
        solve_check(ctx, A, &so, 1e-7, label, &st);
        CHECK_MSG(st.K_original > 10 * K, "the permutations hide the band: K_original %lld", (long long)st.K_original);
        /* DB recovers the diagonal, CM the band: within a small factor of the hidden K */
        CHECK_MSG(st.K_cm <= 3 * K && st.K_cm >= K / 2, "K_cm %lld for hidden K %lld", (long long)st.K_cm,
                  (long long)K);
        CHECK(st.db_used && st.scaled && st.cm_used && !st.spd);
        CHECK(st.method == SAP_METHOD_SAPD || st.method == SAP_METHOD_SAPC);
        CHECK(st.K_max <= st.K_drop && st.K_drop <= st.K_cm);
        CHECK(st.time_db > 0 && st.time_cm > 0 && st.time_lu > 0 && st.time_kry > 0);
        /* without DB (the diagonal is hidden by the row permutation too) the chain still
         * solves it, or the method reports the failure */
        sap_csr_destroy(A);
    }
}

/* ---- the skip rules: each reordering stage where it must and must not run ----------------- */

/* Solves A with method (NULL: auto) and partitions (0: auto), third_stage given when >= 0;
 * checks which stages ran and the words of reason. */
static void skip_case(sap_context *ctx, const char *label, const sap_csr *A, const char *method, int partitions,
                      int third, int want_db, int want_cm, int want_third, const char *word)
{
    sap_solver_options so;
    sap_solver_options_init(&so);
    CHECK_OK(ctx, sap_solver_options_set(&so, "host_direct", "0"));
    if (method) CHECK_OK(ctx, sap_solver_options_set(&so, "method", method));
    so.partitions = partitions;
    if (third >= 0) so.third_stage = third;
    sap_solver_stats st;
    solve_check(ctx, A, &so, 1e-7, label, &st);
    CHECK_MSG(st.db_used == want_db, "%s: DB %d, want %d (%s)", label, st.db_used, want_db, st.reason);
    CHECK_MSG(st.cm_used == want_cm, "%s: CM %d, want %d (%s)", label, st.cm_used, want_cm, st.reason);
    if (want_third >= 0)
        CHECK_MSG(st.third_stage_used == want_third, "%s: third stage %d, want %d (%s)", label, st.third_stage_used,
                  want_third, st.reason);
    CHECK_MSG(strstr(st.reason, word) != NULL, "%s: reason lacks \"%s\": %s", label, word, st.reason);
    if (!want_db && !want_cm) CHECK(st.K_cm == st.K_original && st.time_db == 0 && st.time_cm == 0);
}

static void test_skip_rules(sap_context *ctx)
{
    printf("skip rules\n");
    const sap_int n = 3000, K = 20;
    sap_csr *A = NULL, *B = NULL, *C = NULL, *D = NULL, *E = NULL;
    sap_int *p = malloc(sizeof(sap_int) * (size_t)n);
    /* dominant, dense band: neither DB nor CM, nor the third stage (automatic) */
    CHECK_OK(ctx, sap_gen_banded(ctx, n, K, 1.2, 0, 5, &A));
    skip_case(ctx, "dominant band", A, NULL, 0, -1, 0, 0, -1, "DB off: diagonally dominant");
    skip_case(ctx, "dominant band, CM", A, NULL, 0, -1, 0, 0, -1, "CM off: K 20 within 1.1x of the bound 20");
    skip_case(ctx, "dominant band sap-d P4", A, "sap-d", 4, -1, 0, 0, 0, "CM off");
    skip_case(ctx, "... third stage given", A, "sap-d", 4, 1, 0, 0, 1, "CM off");
    /* not dominant, every row's diagonal its largest entry: DB (its matching the identity,
     * its scaling), no CM (the band stays at the bound) */
    CHECK_OK(ctx, sap_gen_banded(ctx, n, K, 0.5, 0, 6, &B));
    skip_case(ctx, "non-dominant band", B, NULL, 0, -1, 1, 0, -1, "rows not dominant");
    skip_case(ctx, "non-dominant band, CM", B, NULL, 0, -1, 1, 0, -1,
              "CM off: K 20 within 1.1x of the bound 20 (DB keeps the order)");
    /* ... its rows shifted by one: the largest entries off the diagonal, DB permutes, then CM
     * (K after DB is not known before it) */
    for (sap_int i = 0; i < n; i++) p[i] = (i + 1) % n;
    CHECK_OK(ctx, sap_csr_permute(B, p, NULL, &E));
    skip_case(ctx, "non-dominant band, rows shifted", E, NULL, 0, -1, 1, 1, -1, "CM on: K");
    /* dominant, the band hidden by a symmetric permutation: no DB, CM finds the band */
    for (sap_int i = 0; i < n; i++) p[i] = i;
    uint64_t r = 12345;
    for (sap_int i = n - 1; i > 0; i--) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        sap_int j = (sap_int)((r >> 33) % (uint64_t)(i + 1)), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    CHECK_OK(ctx, sap_csr_permute(A, p, p, &C));
    sap_solver_stats st;
    skip_case(ctx, "dominant, permuted", C, NULL, 0, -1, 0, 1, -1, "CM on: K");
    (void)st;
    /* SPD Poisson (5 entries a row, K = 40 > 1.1 x 2): no DB, CM */
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 40, 40, &D));
    skip_case(ctx, "poisson2d", D, NULL, 0, -1, 0, 1, -1, "DB off: SPD");
    /* options given win over the rules */
    sap_solver_options so;
    sap_solver_options_init(&so);
    CHECK_OK(ctx, sap_solver_options_set(&so, "db", "product"));
    CHECK_OK(ctx, sap_solver_options_set(&so, "cm", "on"));
    solve_check(ctx, A, &so, 1e-7, "dominant band, DB and CM given", &st);
    CHECK(st.db_used && st.cm_used && strstr(st.reason, "(given)"));
    free(p);
    sap_csr_destroy(A);
    sap_csr_destroy(B);
    sap_csr_destroy(C);
    sap_csr_destroy(D);
    sap_csr_destroy(E);
}

/* sap_solver_create_borrowed: the caller's A is used, never written (refactor copies it) */
static void test_borrowed(sap_context *ctx)
{
    printf("borrowed\n");
    const sap_int n = 2000;
    sap_csr *A = NULL, *A0 = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, n, 10, 1.0, 0, 3, &A)); /* no reordering: R->A is A itself */
    CHECK_OK(ctx, sap_csr_copy(A, &A0));
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    double *xs = malloc(sizeof(double) * (size_t)n), *v = malloc(sizeof(double) * (size_t)A->nnz);
    sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A, 1.0, xs, 0.0, b);
    sap_solver *S = NULL;
    CHECK_OK(ctx, sap_solver_create_borrowed(ctx, A, NULL, &S));
    CHECK_OK(ctx, sap_solver_solve(S, b, x));
    CHECK_MSG(rel_error(x, xs, n) < 1e-8, "borrowed: error %.3g", rel_error(x, xs, n));
    for (sap_int p = 0; p < A->nnz; p++) v[p] = 2.0 * A->val[p];
    CHECK_OK(ctx, sap_solver_refactor(S, v));
    memset(x, 0, sizeof(double) * (size_t)n);
    CHECK_OK(ctx, sap_solver_solve(S, b, x));
    for (sap_int i = 0; i < n; i++) x[i] *= 2.0;
    CHECK_MSG(rel_error(x, xs, n) < 1e-8, "borrowed, refactor 2A: error %.3g", rel_error(x, xs, n));
    CHECK_MSG(memcmp(A->val, A0->val, sizeof(double) * (size_t)A->nnz) == 0, "the borrowed A was written");
    sap_solver_stats st;
    sap_solver_get_stats(S, &st);
    CHECK(st.time_create >= 0 && st.time_stats > 0);
    sap_solver_destroy(S);
    sap_csr_destroy(A);
    sap_csr_destroy(A0);
    free(b);
    free(x);
    free(xs);
    free(v);
}

/* ---- real matrices ---------------------------------------------------------------------------- */

static void test_real(sap_context *ctx)
{
    printf("real matrices\n");
    if (!sap_test_have_matrices("real matrices")) return;
    struct {
        const char *name;
        int spd;
        double err;
    } tab[] = {{"bcsstk14", 1, 1e-5}, {"west0479", 0, 0}, {"bayer03", 0, 0}, {"cage8", 0, 1e-8}, {"lns_3937", 0, 0},
               {"nos4", 1, 1e-6}};
    int direct = 0;
    for (size_t i = 0; i < 2 * sizeof(tab) / sizeof(tab[0]); i++) {
        /* first with the defaults (small systems on the host: a direct banded LU with
         * pivoting), then the SaP path (host_direct = 0) */
        const int sap_path = i >= sizeof(tab) / sizeof(tab[0]);
        const size_t t = sap_path ? i - sizeof(tab) / sizeof(tab[0]) : i;
        sap_csr *A = load(ctx, tab[t].name);
        if (!A) continue;
        sap_solver_stats st;
        sap_solver_options so;
        sap_solver_options_init(&so);
        if (sap_path) CHECK_OK(ctx, sap_solver_options_set(&so, "host_direct", "0"));
        char label[64];
        snprintf(label, sizeof(label), "%s%s", tab[t].name, sap_path ? " (SaP)" : "");
        solve_check(ctx, A, &so, tab[t].err, label, &st);
        if (!sap_path && strstr(st.reason, "small system on the host")) {
            direct++;
            CHECK_MSG(st.method == SAP_METHOD_BAND_PIVOT && st.ntries == 1, "%s: %s after %d tries", label,
                      sap_solver_method_name(st.method), st.ntries);
        }
        if (sap_path) CHECK_MSG(st.tried[0].method != SAP_METHOD_BAND_PIVOT, "%s: band-pivot first", label);
        CHECK_MSG(st.spd == tab[t].spd, "%s: spd %d", tab[t].name, st.spd);
        if (strstr(st.reason, "direct-host first")) /* a sparse direct method needs no DB */
            CHECK_MSG(!st.db_used && st.method == SAP_METHOD_DIRECT_HOST, "%s: db %d", tab[t].name, st.db_used);
        else
            CHECK_MSG(st.db_used == !tab[t].spd, "%s: db %d", tab[t].name, st.db_used);
        if (tab[t].spd && st.method == SAP_METHOD_SAPD)
            CHECK_MSG(st.krylov_type == SAP_KRYLOV_CG, "%s: SPD with SaP-D solved with %s", tab[t].name,
                      sap_krylov_name(st.krylov_type));
        if (st.method == SAP_METHOD_SAPC) CHECK(st.krylov_type == SAP_KRYLOV_RICHARDSON);
        sap_csr_destroy(A);
    }
#ifdef SAP_HAVE_LAPACKE /* LAPACK present: the small matrices above go the direct way */
    CHECK_MSG(direct > 0, "no small system was solved directly");
#else
    (void)direct;
#endif
    /* with DB forced on an SPD matrix, and off on a nonsymmetric one with a full diagonal */
    sap_solver_options o;
    sap_solver_options_init(&o);
    sap_csr *A = load(ctx, "bcsstk14");
    if (A) {
        sap_solver_stats st;
        CHECK_OK(ctx, sap_solver_options_set(&o, "db", "product"));
        solve_check(ctx, A, &o, 1e-5, "bcsstk14 db=product", &st);
        CHECK(st.db_used && st.scaled && st.krylov_type != SAP_KRYLOV_CG);
        sap_csr_destroy(A);
    }
    A = load(ctx, "cage8");
    if (A) {
        sap_solver_stats st;
        CHECK_OK(ctx, sap_solver_options_set(&o, "db", "none"));
        solve_check(ctx, A, &o, 1e-8, "cage8 db=none", &st);
        CHECK(!st.db_used && !st.scaled);
        CHECK_OK(ctx, sap_solver_options_set(&o, "db", "transversal"));
        solve_check(ctx, A, &o, 1e-8, "cage8 db=transversal", &st);
        CHECK(st.db_used && !st.scaled);
        sap_csr_destroy(A);
    }
    /* a matrix with zero diagonal entries and DB off: SaP fails, the chain goes on */
    A = load(ctx, "west0479");
    if (A) {
        sap_solver_stats st;
        sap_solver_options_init(&o);
        CHECK_OK(ctx, sap_solver_options_set(&o, "db", "none"));
        CHECK_OK(ctx, sap_solver_options_set(&o, "host_direct", "0"));
        solve_check(ctx, A, &o, 0, "west0479 db=none", &st);
        CHECK_MSG(st.ntries >= 2 && st.method != st.tried[0].method, "the chain moved on: %d tries", st.ntries);
        CHECK(st.tried[0].status != SAP_OK);
        sap_csr_destroy(A);
    }
}

/* ---- many right-hand sides, refactorization --------------------------------------------------- */

static void test_many_and_refactor(sap_context *ctx, const sap_csr *A, const sap_solver_options *opt,
                                   const char *label)
{
    const sap_int n = A->nrows, k = 3;
    double *B = malloc(sizeof(double) * (size_t)(n * k)), *X = calloc((size_t)(n * k), sizeof(double));
    double *x1 = calloc((size_t)n, sizeof(double)), *xs = malloc(sizeof(double) * (size_t)(n * k));
    for (sap_int j = 0; j < k; j++) {
        sap_gen_xstar(ctx, n, j == 0 ? SAP_XSTAR_PARABOLA : SAP_XSTAR_RANDOM, 7 + (uint64_t)j, xs + j * n);
        sap_csr_spmv(A, 1.0, xs + j * n, 0.0, B + j * n);
    }
    sap_solver *S = NULL;
    CHECK_OK(ctx, sap_solver_create(ctx, A, opt, &S));
    sap_status s = sap_solver_solve_many(S, k, B, n, X, n);
    CHECK_MSG(s == SAP_OK, "%s solve_many: %s (%s)", label, sap_status_name(s), sap_context_last_error(ctx));
    sap_solver_stats st;
    sap_solver_get_stats(S, &st);
    CHECK(st.nrhs == k);
    double worst = 0;
    for (sap_int j = 0; j < k; j++) {
        double r = sap_test_rel_residual(A, X + j * n, B + j * n);
        CHECK_MSG(r <= 1.0001e-10, "%s column %lld: residual %.3g", label, (long long)j, r);
        if (r > worst) worst = r;
    }
    CHECK_MSG(st.relative_residual >= 0.99 * worst - 1e-15, "%s: stats residual %.3g < worst %.3g", label,
              st.relative_residual, worst);
    /* one column at a time gives the same solutions (to the tolerance) */
    for (sap_int j = 0; j < k; j++) {
        memset(x1, 0, sizeof(double) * (size_t)n);
        CHECK_OK(ctx, sap_solver_solve(S, B + j * n, x1));
        CHECK_MSG(rel_error(x1, X + j * n, n) <= 1e-6, "%s column %lld: solve and solve_many differ by %.3g", label,
                  (long long)j, rel_error(x1, X + j * n, n));
    }
    /* refactor: 2A gives x / 2 for the same b */
    double *v = malloc(sizeof(double) * (size_t)A->nnz);
    for (sap_int p = 0; p < A->nnz; p++) v[p] = 2.0 * A->val[p];
    sap_status rs = sap_solver_refactor(S, v);
    CHECK_MSG(rs == SAP_OK || rs == SAP_WARN_BOOSTED_PIVOTS, "%s refactor: %s", label, sap_status_name(rs));
    memset(x1, 0, sizeof(double) * (size_t)n);
    CHECK_OK(ctx, sap_solver_solve(S, B, x1));
    for (sap_int i = 0; i < n; i++) x1[i] *= 2.0;
    CHECK_MSG(rel_error(x1, X, n) <= 1e-6, "%s: refactor with 2A: error %.3g", label, rel_error(x1, X, n));
    /* refactor with perturbed values: residual of the new system */
    sap_csr *A2 = NULL;
    CHECK_OK(ctx, sap_csr_copy(A, &A2));
    for (sap_int p = 0; p < A->nnz; p++) {
        A2->val[p] = A->val[p] * (1.0 + 0.05 * sin(1.0 + (double)p));
        v[p] = A2->val[p];
    }
    rs = sap_solver_refactor(S, v);
    CHECK_MSG(rs == SAP_OK || rs == SAP_WARN_BOOSTED_PIVOTS, "%s refactor 2: %s", label, sap_status_name(rs));
    memset(x1, 0, sizeof(double) * (size_t)n);
    s = sap_solver_solve(S, B, x1);
    CHECK_MSG(s == SAP_OK, "%s after refactor: %s (%s)", label, sap_status_name(s), sap_context_last_error(ctx));
    CHECK_MSG(sap_test_rel_residual(A2, x1, B) <= 1.0001e-10, "%s: refactor residual %.3g", label, sap_test_rel_residual(A2, x1, B));
    CHECK_MSG(rel_error(x1, X, n) > 1e-4, "%s: the perturbed system has another solution", label);
    sap_solver_get_stats(S, &st);
    print_stats(label, &st);
    CHECK(sap_solver_refactor(S, NULL) == SAP_ERR_INVALID);
    v[0] = NAN;
    CHECK(sap_solver_refactor(S, v) == SAP_ERR_NONFINITE);
    sap_csr_destroy(A2);
    sap_solver_destroy(S);
    free(v);
    free(B);
    free(X);
    free(x1);
    free(xs);
}

/* refactor with values that defeat the current method: the hidden diagonal of a
 * synthetic matrix set to zero (same pattern); SaP then boosts most pivots and the chain
 * moves on to a pivoting method */
static void test_refactor_fallback(sap_context *ctx)
{
    const sap_int n = 1500;
    sap_int *p = malloc(sizeof(sap_int) * (size_t)n), *q = malloc(sizeof(sap_int) * (size_t)n);
    sap_csr *A = NULL, *A2 = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, n, 6, 1.0, 0.6, 23, &A, p, q));
    CHECK_OK(ctx, sap_csr_copy(A, &A2));
    for (sap_int i = 0; i < n; i++)
        for (sap_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (p[i] == q[A->colind[k]]) A2->val[k] = 0.0;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + (double)(i % 7);
    sap_solver *S = NULL;
    sap_solver_options so;
    sap_solver_options_init(&so);
    CHECK_OK(ctx, sap_solver_options_set(&so, "host_direct", "0")); /* the SaP path */
    CHECK_OK(ctx, sap_solver_create(ctx, A, &so, &S));
    CHECK_OK(ctx, sap_solver_solve(S, b, x));
    sap_solver_stats st;
    sap_solver_get_stats(S, &st);
    const sap_solver_method first = st.method;
    CHECK(first == SAP_METHOD_SAPD || first == SAP_METHOD_SAPC);
    sap_status rs = sap_solver_refactor(S, A2->val);
    CHECK_MSG(rs >= 0, "refactor: %s (%s)", sap_status_name(rs), sap_context_last_error(ctx));
    memset(x, 0, sizeof(double) * (size_t)n);
    sap_status s = sap_solver_solve(S, b, x);
    sap_solver_get_stats(S, &st);
    print_stats("refactor fallback", &st);
    CHECK_MSG(s == SAP_OK, "solve after refactor: %s (%s)", sap_status_name(s), sap_context_last_error(ctx));
    CHECK_MSG(sap_test_rel_residual(A2, x, b) <= 1.0001e-10, "residual %.3g", sap_test_rel_residual(A2, x, b));
    CHECK_MSG(st.method != first && st.ntries >= 2, "the chain moved on: %s, %d tries", sap_solver_method_name(st.method),
              st.ntries);
    CHECK(st.tried[0].method == first && st.tried[0].status != SAP_OK);
    sap_solver_destroy(S);
    sap_csr_destroy(A);
    sap_csr_destroy(A2);
    free(p);
    free(q);
    free(b);
    free(x);
}

static void test_reuse(sap_context *ctx)
{
    test_refactor_fallback(ctx);
    printf("many right-hand sides and refactor\n");
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 3000, 12, 1.0, 0.5, 5, &A, NULL, NULL));
    test_many_and_refactor(ctx, A, NULL, "synthetic auto");
    sap_solver_options o;
    sap_solver_options_init(&o);
    o.method = SAP_METHOD_BAND_PIVOT;
    o.fallback = 0;
    test_many_and_refactor(ctx, A, &o, "synthetic band-pivot");
    sap_csr_destroy(A);
    /* jacobi: the columns one after another (CG) */
    A = NULL;
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 30, 30, &A));
    sap_solver_options_init(&o);
    o.method = SAP_METHOD_JACOBI;
    o.fallback = 0;
    if (A) test_many_and_refactor(ctx, A, &o, "poisson2d jacobi");
    sap_csr_destroy(A);
    if (sap_test_have_matrices("reuse on real matrices")) {
        A = load(ctx, "bcsstk14");
        if (A) test_many_and_refactor(ctx, A, NULL, "bcsstk14");
        sap_csr_destroy(A);
        A = load(ctx, "west0479");
        if (A) test_many_and_refactor(ctx, A, NULL, "west0479");
        sap_csr_destroy(A);
    }
}

/* ---- forced methods, memory limit --------------------------------------------------------------- */

static void test_forced(sap_context *ctx)
{
    printf("forced methods\n");
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 5000, 10, 2.0, 0.5, 3, &A, NULL, NULL));
    const char *names[] = {"sap-d", "sap-c", "band-lu", "band-pivot", "jacobi"};
    const sap_solver_method ms[] = {SAP_METHOD_SAPD, SAP_METHOD_SAPC, SAP_METHOD_BAND_LU, SAP_METHOD_BAND_PIVOT,
                                    SAP_METHOD_JACOBI};
    for (int i = 0; i < 5; i++) {
        sap_solver_options o;
        sap_solver_options_init(&o);
        CHECK_OK(ctx, sap_solver_options_set(&o, "method", names[i]));
        CHECK_OK(ctx, sap_solver_options_set(&o, "fallback", "off"));
        CHECK(o.method == ms[i]);
        sap_solver_stats st;
        char label[64];
        snprintf(label, sizeof(label), "forced %s", names[i]);
        solve_check(ctx, A, &o, 1e-7, label, &st);
        CHECK_MSG(st.method == ms[i], "%s: ran %s", label, sap_solver_method_name(st.method));
        CHECK(st.ntries == 1);
        if (ms[i] == SAP_METHOD_SAPC) CHECK_MSG(st.partitions >= 2, "sap-c with P = %lld", (long long)st.partitions);
        if (ms[i] == SAP_METHOD_SAPC) CHECK(st.third_stage_used == 0);
        if (ms[i] == SAP_METHOD_SAPD && st.partitions > 1) CHECK(st.third_stage_used == 1);
        if (ms[i] == SAP_METHOD_BAND_LU) CHECK(st.partitions == 1 && st.factor_precision == SAP_DOUBLE);
        if (ms[i] == SAP_METHOD_BAND_PIVOT) CHECK(st.iterations <= 4);
        CHECK(strcmp(sap_solver_method_name(ms[i]), names[i]) == 0);
    }
    /* partitions, precision, drop-off and the Krylov method by name */
    sap_solver_options o;
    sap_solver_options_init(&o);
    CHECK_OK(ctx, sap_solver_options_set(&o, "method", "sap-d"));
    CHECK_OK(ctx, sap_solver_options_set(&o, "partitions", "4"));
    CHECK_OK(ctx, sap_solver_options_set(&o, "precision", "double"));
    CHECK_OK(ctx, sap_solver_options_set(&o, "drop", "0.999"));
    CHECK_OK(ctx, sap_solver_options_set(&o, "krylov", "gmres:30"));
    CHECK_OK(ctx, sap_solver_options_set(&o, "third_stage", "0"));
    sap_solver_stats st;
    solve_check(ctx, A, &o, 1e-7, "sap-d P=4 drop gmres", &st);
    CHECK(st.partitions == 4 && st.factor_precision == SAP_DOUBLE && st.krylov_type == SAP_KRYLOV_GMRES);
    CHECK(st.K_drop < st.K_cm && st.kept_fraction < 1 && st.kept_fraction >= 0.999);
    CHECK(st.third_stage_used == 0);
    /* memory limit: the band is narrowed to fit, and says so */
    sap_solver_options_init(&o);
    CHECK_OK(ctx, sap_solver_options_set(&o, "host_direct", "0"));
    CHECK_OK(ctx, sap_solver_options_set(&o, "memory_limit", "2.4M"));
    CHECK(o.memory_limit == (int64_t)(2.4 * 1048576));
    solve_check(ctx, A, &o, 1e-7, "memory_limit 2.4M", &st);
    CHECK_MSG(st.K_drop < st.K_cm, "memory limit: K_drop %lld, K_cm %lld", (long long)st.K_drop, (long long)st.K_cm);
    CHECK_MSG(strstr(st.tried[0].note, "narrowed") != NULL, "note: %s", st.tried[0].note);
    CHECK(st.memory_estimate <= o.memory_limit);
    /* far too small: nothing fits but Jacobi */
    CHECK_OK(ctx, sap_solver_options_set(&o, "memory_limit", "1k"));
    sap_solver *S = NULL;
    double *b = calloc((size_t)A->nrows, sizeof(double)), *x = calloc((size_t)A->nrows, sizeof(double));
    b[0] = 1;
    CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
    sap_status s = sap_solver_solve(S, b, x);
    sap_solver_get_stats(S, &st);
    print_stats("memory_limit 1k", &st);
    CHECK_MSG(s == SAP_ERR_OUT_OF_MEMORY || st.method == SAP_METHOD_JACOBI, "1k: %s with %s", sap_status_name(s),
              sap_solver_method_name(st.method));
    sap_solver_destroy(S);
    free(b);
    free(x);
    sap_csr_destroy(A);
}

/* The original system's true residual from the backend (krylov_weights in
 * solver_method_krylov.c): with DB's row scaling and CM's permutations the Krylov method
 * weighs its own true residual back to the original system's, which the refinement then
 * trusts instead of a host SpMV.  The residual the statistics report must be the host's
 * ||b - A x|| / ||b|| (one and many right-hand sides), for SaP-D, SaP-C and the third stage. */
static void test_weighted_residual(sap_context *ctx)
{
    printf("weighted residual\n");
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 4000, 15, 0.6, 0.7, 23, &A, NULL, NULL));
    if (!A) return;
    const sap_int n = A->nrows, k = 3;
    double *B = malloc(sizeof(double) * (size_t)(n * k)), *X = calloc((size_t)(n * k), sizeof(double));
    for (sap_int i = 0; i < n * k; i++) B[i] = 1.0 + cos(0.3 * (double)i) * (double)(1 + i % 5);
    const char *ms[][2] = {{"sap-d", "0"}, {"sap-c", "0"}, {"sap-d", "1"}};
    for (int m = 0; m < 3; m++) {
        sap_solver_options o;
        sap_solver_options_init(&o);
        sap_solver_options_set(&o, "method", ms[m][0]);
        sap_solver_options_set(&o, "third_stage", ms[m][1]);
        sap_solver_options_set(&o, "db", "product");
        sap_solver_options_set(&o, "scale", "1");
        sap_solver_options_set(&o, "fallback", "0");
        sap_solver *S = NULL;
        CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
        if (!S) continue;
        for (int many = 0; many < 2; many++) {
            memset(X, 0, sizeof(double) * (size_t)(n * k));
            sap_status st = many ? sap_solver_solve_many(S, k, B, n, X, n) : sap_solver_solve(S, B, X);
            CHECK_MSG(st == SAP_OK, "%s third=%s many=%d: %s (%s)", ms[m][0], ms[m][1], many, sap_status_name(st),
                      sap_context_last_error(ctx));
            sap_solver_stats ss;
            sap_solver_get_stats(S, &ss);
            CHECK_MSG(ss.db_used && ss.scaled, "%s: DB %d scaled %d", ms[m][0], ss.db_used, ss.scaled);
            double worst = 0;
            for (sap_int j = 0; j < (many ? k : 1); j++) worst = fmax(worst, sap_test_rel_residual(A, X + j * n, B + j * n));
            CHECK_MSG(worst <= 1.0001e-10, "%s third=%s many=%d: host residual %.3g", ms[m][0], ms[m][1], many, worst);
            CHECK_MSG(fabs(ss.relative_residual - worst) <= 1e-3 * worst + 1e-16,
                      "%s third=%s many=%d: reported residual %.6g, host %.6g", ms[m][0], ms[m][1], many,
                      ss.relative_residual, worst);
        }
        sap_solver_destroy(S);
    }
    free(B);
    free(X);
    sap_csr_destroy(A);
}

/* solve_many with leading dimensions larger than n, for the batched methods band-pivot (one
 * dgbtrs for all columns) and sap-d (the Krylov method in lockstep), against solve */
static void test_strides(sap_context *ctx)
{
    printf("strides\n");
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_synthetic(ctx, 700, 8, 0.8, 0.5, 17, &A, NULL, NULL));
    const sap_int n = A->nrows, k = 4, ldb = n + 5, ldx = n + 3;
    double *B = malloc(sizeof(double) * (size_t)(ldb * k)), *X = malloc(sizeof(double) * (size_t)(ldx * k));
    double *x = malloc(sizeof(double) * (size_t)n);
    for (sap_int j = 0; j < k; j++)
        for (sap_int i = 0; i < ldb; i++) B[i + j * ldb] = i < n ? sin(1.0 + (double)(i * (j + 1))) : NAN;
    const char *ms[] = {"band-pivot", "sap-d"};
    for (int m = 0; m < 2; m++) {
        sap_solver_options o;
        sap_solver_options_init(&o);
        sap_solver_options_set(&o, "method", ms[m]);
        sap_solver_options_set(&o, "fallback", "0");
        sap_solver *S = NULL;
        CHECK_OK(ctx, sap_solver_create(ctx, A, &o, &S));
        for (sap_int i = 0; i < ldx * k; i++) X[i] = (i % ldx) < n ? 0.0 : -7.0;
        CHECK_OK(ctx, sap_solver_solve_many(S, k, B, ldb, X, ldx));
        for (sap_int j = 0; j < k; j++) {
            memset(x, 0, sizeof(double) * (size_t)n);
            CHECK_OK(ctx, sap_solver_solve(S, B + j * ldb, x));
            CHECK_MSG(rel_error(X + j * ldx, x, n) < 1e-8, "%s column %lld: %.3g", ms[m], (long long)j,
                      rel_error(X + j * ldx, x, n));
            CHECK(sap_test_rel_residual(A, X + j * ldx, B + j * ldb) <= 1.0001e-10);
            for (sap_int i = n; i < ldx; i++) CHECK(X[i + j * ldx] == -7.0); /* padding untouched */
        }
        sap_solver_stats st;
        sap_solver_get_stats(S, &st);
        CHECK(st.method == (m ? SAP_METHOD_SAPD : SAP_METHOD_BAND_PIVOT));
        /* the batch ran (its note) and counted the Krylov iterations of every column */
        for (sap_int i = 0; i < ldx * k; i++) X[i] = 0.0;
        CHECK_OK(ctx, sap_solver_solve_many(S, k, B, ldb, X, ldx));
        sap_solver_get_stats(S, &st);
        CHECK_MSG(st.ntries >= 1 && strstr(st.tried[st.ntries - 1].note, "columns") != NULL, "%s: note '%s'", ms[m],
                  st.ntries >= 1 ? st.tried[st.ntries - 1].note : "");
        if (m) CHECK_MSG(st.iterations >= (double)k, "sap-d solve_many: %g iterations for %lld columns", st.iterations,
                         (long long)k);
        sap_solver_destroy(S);
    }
    free(B);
    free(X);
    free(x);
    sap_csr_destroy(A);
}

/* ---- options by name ------------------------------------------------------------------------- */

static void test_options(void)
{
    printf("options\n");
    sap_solver_options o, ref;
    sap_solver_options_init(&o);
    CHECK(o.method == SAP_METHOD_AUTO && o.fallback == 1 && o.db == -1 && o.drop_delta < 0 && o.host_small == 1);
    CHECK(o.krylov.tol == 1e-10 && o.krylov.maxit == 1000);
    const char *good[][2] = {{"method", "band-lu"}, {"fallback", "0"},      {"db", "transversal"}, {"scale", "auto"},
                             {"cm", "off"},         {"drop_delta", "0.99"}, {"partitions", "8"},   {"third_stage", "1"},
                             {"precision", "float"}, {"boost_threshold", "1e-8"}, {"boost_value", "1e-4"},
                             {"krylov", "bicgstabl:4"}, {"tol", "1e-8"}, {"maxit", "5k"}, {"memory_limit", "2G"},
                             {"host_small", "no"}, {"stagnation", "20"}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CHECK_MSG(sap_solver_options_set(&o, good[i][0], good[i][1]) == SAP_OK, "%s=%s", good[i][0], good[i][1]);
    CHECK(o.method == SAP_METHOD_BAND_LU && o.fallback == 0 && o.db == SAP_DB_TRANSVERSAL && o.scale == -1);
    CHECK(o.cm == 0 && o.drop_delta == 0.99 && o.partitions == 8 && o.third_stage == 1);
    CHECK(o.factor_precision == SAP_FLOAT && o.boost_threshold == 1e-8 && o.boost_value == 1e-4);
    CHECK(o.krylov_auto == 0 && o.krylov.type == SAP_KRYLOV_BICGSTABL && o.krylov.param == 4);
    CHECK(o.krylov.tol == 1e-8 && o.krylov.maxit == 5000 && o.memory_limit == 2147483648LL && o.host_small == 0);
    CHECK(o.krylov.stagnation_window == 20);
    ref = o;
    const char *bad[][2] = {{"methd", "auto"},    {"method", "lu"},     {"fallback", "maybe"}, {"db", "yes please"},
                            {"drop", "-0.5"},     {"drop", "abc"},      {"partitions", "-1"},  {"precision", "half"},
                            {"krylov", "nosuch"},   {"tol", "-1"},        {"tol", "nan"},        {"maxit", "10q"},
                            {"memory_limit", "2X"}, {"scale", "2"},     {"", "1"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_MSG(sap_solver_options_set(&o, bad[i][0], bad[i][1]) == SAP_ERR_INVALID, "%s=%s accepted", bad[i][0],
                  bad[i][1]);
    CHECK(memcmp(&o, &ref, sizeof(o)) == 0);
    CHECK(sap_solver_options_set(NULL, "tol", "1") == SAP_ERR_INVALID);
    CHECK(sap_solver_options_set(&o, NULL, "1") == SAP_ERR_INVALID);
    CHECK(sap_solver_options_set(&o, "tol", NULL) == SAP_ERR_INVALID);
    CHECK(strstr(sap_solver_options_help(), "memory_limit") != NULL);
    sap_solver_method m;
    CHECK(sap_solver_method_parse("band-pivot", &m) == SAP_OK && m == SAP_METHOD_BAND_PIVOT);
    CHECK(sap_solver_method_parse("nope", &m) == SAP_ERR_INVALID);
    CHECK(strcmp(sap_solver_method_name((sap_solver_method)99), "unknown") == 0);
}

/* ---- bad input ---------------------------------------------------------------------------------- */

static void test_bad_input(sap_context *ctx)
{
    printf("bad input\n");
    sap_solver *S = NULL;
    sap_csr *A = NULL, *R = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 50, 3, 2.0, 0, 1, &A));
    CHECK_STATUS(ctx, sap_solver_create(ctx, NULL, NULL, &S), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_solver_create(ctx, A, NULL, NULL), SAP_ERR_INVALID);
    CHECK(sap_solver_create(NULL, A, NULL, &S) == SAP_ERR_INVALID);
    CHECK(sap_solver_setup(NULL) == SAP_ERR_INVALID);
    CHECK(sap_solver_solve(NULL, NULL, NULL) == SAP_ERR_INVALID);
    CHECK(sap_solver_get_stats(NULL, NULL) == SAP_ERR_INVALID);
    sap_solver_destroy(NULL);
    /* non-square */
    CHECK_OK(ctx, sap_csr_create(ctx, 3, 4, 0, &R));
    CHECK_STATUS(ctx, sap_solver_create(ctx, R, NULL, &S), SAP_ERR_NOT_SQUARE);
    CHECK(S == NULL);
    sap_csr_destroy(R);
    /* bad options */
    sap_solver_options o;
    sap_solver_options_init(&o);
    o.partitions = 51;
    CHECK_STATUS(ctx, sap_solver_create(ctx, A, &o, &S), SAP_ERR_INVALID);
    sap_solver_options_init(&o);
    o.method = (sap_solver_method)17;
    CHECK_STATUS(ctx, sap_solver_create(ctx, A, &o, &S), SAP_ERR_INVALID);
    /* NaN in the matrix, in b, in x0 */
    A->val[7] = NAN;
    CHECK_STATUS(ctx, sap_solver_create(ctx, A, NULL, &S), SAP_ERR_NONFINITE);
    A->val[7] = 0.5;
    CHECK_OK(ctx, sap_solver_create(ctx, A, NULL, &S));
    double b[50], x[50];
    for (int i = 0; i < 50; i++) b[i] = 1, x[i] = 0;
    b[3] = INFINITY;
    CHECK_STATUS(ctx, sap_solver_solve(S, b, x), SAP_ERR_NONFINITE);
    b[3] = 1;
    x[2] = NAN;
    CHECK_STATUS(ctx, sap_solver_solve(S, b, x), SAP_ERR_NONFINITE);
    x[2] = 0;
    CHECK_STATUS(ctx, sap_solver_solve(S, NULL, x), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_solver_solve_many(S, 2, b, 10, x, 50), SAP_ERR_INVALID);
    /* still usable, b = 0 gives 0 */
    CHECK_OK(ctx, sap_solver_solve(S, b, x));
    CHECK(sap_test_rel_residual(A, x, b) <= 1e-10);
    for (int i = 0; i < 50; i++) b[i] = 0, x[i] = 1;
    CHECK_OK(ctx, sap_solver_solve(S, b, x));
    int zero = 1;
    for (int i = 0; i < 50; i++) zero &= x[i] == 0;
    CHECK(zero);
    sap_solver_destroy(S);
    S = NULL;
    /* structurally singular: an empty column, with and without DB */
    sap_coo *C = NULL;
    CHECK_OK(ctx, sap_coo_create(ctx, 6, 6, 16, &C));
    for (int i = 0; i < 6; i++)
        if (i != 2) sap_coo_push(C, i, i, 4.0);
    for (int i = 0; i < 5; i++) sap_coo_push(C, i + 1, i == 1 ? 0 : i, 1.0);
    CHECK_OK(ctx, sap_csr_from_coo(C, &R));
    sap_coo_destroy(C);
    for (int db = 0; db < 2; db++) {
        sap_solver_options_init(&o);
        o.db = db ? SAP_DB_PRODUCT : SAP_DB_NONE;
        CHECK_OK(ctx, sap_solver_create(ctx, R, &o, &S));
        CHECK_STATUS(ctx, sap_solver_setup(S), SAP_ERR_STRUCTURALLY_SINGULAR);
        CHECK_MSG(strstr(sap_context_last_error(ctx), "rank") != NULL, "message: %s", sap_context_last_error(ctx));
        double bb[6] = {1, 1, 1, 1, 1, 1}, xx[6] = {0};
        CHECK_STATUS(ctx, sap_solver_solve(S, bb, xx), SAP_ERR_STRUCTURALLY_SINGULAR);
        sap_solver_stats st;
        sap_solver_get_stats(S, &st);
        CHECK(st.ntries == 0); /* no chain */
        sap_solver_destroy(S);
        S = NULL;
    }
    sap_csr_destroy(R);
    if (sap_test_have_matrices("mbeacxc")) {
        R = load(ctx, "mbeacxc");
        if (R) {
            CHECK_OK(ctx, sap_solver_create(ctx, R, NULL, &S));
            CHECK_STATUS(ctx, sap_solver_setup(S), SAP_ERR_STRUCTURALLY_SINGULAR);
            printf("  mbeacxc: %s\n", sap_context_last_error(ctx));
            sap_solver_destroy(S);
            sap_csr_destroy(R);
        }
    }
    sap_csr_destroy(A);
}

/* ---- out of memory ------------------------------------------------------------------------------- */

static void test_oom(void)
{
    printf("out-of-memory sweep\n");
    sap_context *ctx0 = sap_test_context(SAP_BACKEND_CPU);
    sap_csr *A0 = NULL;
    CHECK_OK(ctx0, sap_gen_synthetic(ctx0, 400, 6, 1.0, 0.5, 9, &A0, NULL, NULL));
    const sap_int n = A0->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *xs = malloc(sizeof(double) * (size_t)n);
    double *x = malloc(sizeof(double) * (size_t)n);
    sap_gen_xstar(ctx0, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A0, 1.0, xs, 0.0, b);
    int ok = 0, fails = 0;
    for (long k = 0; k < 20000 && !ok; k++) {
        sap_test_failing_alloc fa = {k, 0, 0};
        sap_context *ctx = sap_test_failing_context(&fa);
        if (!ctx) {
            CHECK(0);
            break;
        }
        sap_csr *A = NULL;
        sap_solver *S = NULL;
        sap_status s = sap_csr_copy(A0, &A);
        if (s == SAP_OK) s = sap_solver_create(ctx, A, NULL, &S);
        if (s == SAP_OK) {
            memset(x, 0, sizeof(double) * (size_t)n);
            s = sap_solver_solve(S, b, x);
        }
        if (s == SAP_OK) {
            ok = 1;
            CHECK(rel_error(x, xs, n) < 1e-7);
            /* the solver and the context stay usable for a refactor after success */
        } else {
            fails++;
            if (s != SAP_ERR_OUT_OF_MEMORY) {
                CHECK_MSG(0, "allocation %ld: %s (%s)", k, sap_status_name(s), sap_context_last_error(ctx));
                ok = 1;
            }
        }
        sap_solver_destroy(S);
        sap_csr_destroy(A);
        CHECK_MSG(fa.live == 1, "allocation %ld failing: %ld blocks leaked", k, fa.live - 1); /* 1: the context */
        sap_context_destroy(ctx);
        CHECK(fa.live == 0);
    }
    CHECK(ok);
    printf("  %d failing allocations handled\n", fails);
    CHECK(fails > 20);
    free(b);
    free(x);
    free(xs);
    sap_csr_destroy(A0);
    sap_context_destroy(ctx0);
}

static int cpu_part(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) {
        fprintf(stderr, "no context\n");
        return 1;
    }
    test_options();
    test_bad_input(ctx);
    test_synthetic(ctx);
    test_skip_rules(ctx);
    test_borrowed(ctx);
    test_forced(ctx);
    test_strides(ctx);
    test_weighted_residual(ctx);
    test_reuse(ctx);
    test_real(ctx);
    test_oom();
    sap_context_destroy(ctx);
    return 0;
}

/* ==== --backend cuda: a cuda context against a cpu reference context ==================
 * (rel_error is the cpu part's) */

static sap_context *G, *C;
static int dryrun;

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
    CHECK_MSG(rel_error(xg, xs, n) < err_tol, "%s gpu: error %.3g", label, rel_error(xg, xs, n));
    CHECK_MSG(rel_error(xg, xc, n) < err_tol, "%s: gpu and cpu solutions differ by %.3g", label, rel_error(xg, xc, n));
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
    /* (an automatic chain on the GPU may leave CM out where Jacobi solves first, and DB
     * where its matching is the identity and the probe solved the system; the host runs
     * them before the plan where its small banded LU could apply) */
    const int db_skipped = (!sg.db_used && strstr(sg.reason, "DB off: the probe solved the system")) ||
                           (!sc.db_used && strstr(sc.reason, "DB off: the probe solved the system"));
    CHECK_MSG((sg.cm_used != sc.cm_used || sg.K_cm == sc.K_cm) && sg.K_original == sc.K_original &&
                  (sg.db_used == sc.db_used || db_skipped),
              "%s: reorderings differ (DB %d / %d: %.100s)", label, sg.db_used, sc.db_used, sg.reason);
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

static void gpu_test_forced(void)
{
    printf("forced method and P\n");
    sap_csr *A = NULL;
    /* racecheck (sap_test_tiny): the same paths on a small system */
    const int tiny = sap_test_tiny();
    CHECK_OK(C, sap_gen_synthetic(C, tiny ? 2000 : 60000, tiny ? 20 : 40, 1.0, 0.3, 21, &A, NULL, NULL));
    const char *methods[] = {"sap-d", "sap-c", "band-lu", "jacobi"};
    for (int i = 0; i < 4; i++) {
        sap_solver_options o;
        sap_solver_options_init(&o);
        sap_solver_options_set(&o, "method", methods[i]);
        sap_solver_options_set(&o, "fallback", "0");
        sap_solver_options_set(&o, "host_small", "0");
        if (i < 2) sap_solver_options_set(&o, "partitions", tiny ? "4" : "16");
        char label[64];
        snprintf(label, sizeof(label), "synthetic %s %s", tiny ? "2k" : "60k", methods[i]);
        compare(label, A, &o, 1, 1e-7);
    }
    sap_csr_destroy(A);
}

static void gpu_test_auto(void)
{
    printf("automatic choices\n");
    sap_solver_options o;
    sap_solver_options_init(&o);
    o.host_small = 0;
    sap_csr *A = NULL;
    const int tiny = sap_test_tiny(); /* racecheck: a small system, no real matrices */
    CHECK_OK(C, sap_gen_synthetic(C, tiny ? 3000 : 100000, tiny ? 20 : 60, 1.0, 0.2, 5, &A, NULL, NULL));
    compare(tiny ? "synthetic 3k auto" : "synthetic 100k auto", A, &o, 0, 1e-7);
    sap_csr_destroy(A);
    if (!tiny && sap_test_have_matrices("real matrices on the gpu")) {
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

static void gpu_test_many_refactor(void)
{
    printf("solve_many and refactor on the device\n");
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_synthetic(C, sap_test_tiny() ? 2000 : 50000, sap_test_tiny() ? 10 : 30, 1.0, 0.3, 8, &A, NULL,
                                  NULL));
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
        CHECK_MSG(rel_error(X + j * n, XS + j * n, n) < 1e-6, "column %lld: error %.3g", (long long)j,
                  rel_error(X + j * n, XS + j * n, n));
    for (sap_int p = 0; p < A->nnz; p++) v[p] = 2.0 * A->val[p];
    sap_status rs = sap_solver_refactor(S, v);
    CHECK_MSG(rs == SAP_OK || rs == SAP_WARN_BOOSTED_PIVOTS, "refactor: %s", sap_status_name(rs));
    memset(X, 0, sizeof(double) * (size_t)n);
    CHECK_OK(G, sap_solver_solve(S, B, X));
    for (sap_int i = 0; i < n; i++) X[i] *= 2.0;
    CHECK_MSG(rel_error(X, XS, n) < 1e-6, "refactor 2A: error %.3g", rel_error(X, XS, n));
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

static int gpu_part(void)
{
    int rc = sap_test_gpu_context(sap_test_name(), 1, &G, &dryrun);
    if (rc) return rc;
    C = sap_test_context(SAP_BACKEND_CPU);
    test_skip_rules(G); /* the rules do not depend on the backend */
    gpu_test_forced();
    gpu_test_auto();
    gpu_test_many_refactor();
    sap_context_destroy(C);
    sap_context_destroy(G);
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_solver", cpu_part, gpu_part); }
