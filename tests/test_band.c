/* test_band.c -- the banded SaP solver, per backend (sap_test_main).
 * --backend cpu: SaP-D, SaP-C and the direct banded solve against LAPACK dgbsv (or a
 * dense solve written here when LAPACKE is missing) on random banded systems over K, P, d;
 * uneven partitions, varying K_i, pivot boosting, bad input, the "sap-*" preconditioners,
 * and an out-of-memory sweep; sap__band_fact_apply_many on k columns against k applies.
 * --backend cuda: the banded SaP solver on a cuda context against the same solve on a
 * cpu context: SaP-D and SaP-C in float and double over K (warp and block kernels), P and
 * d; the preconditioner application itself compared entry by entry; boosted-pivot counts;
 * a timing line for N = 200,000, K = 200; the k-column apply over every sweep kernel.
 * Exits 77 (skipped) without CUDA or without a device.  SAP_TEST_GPU_DRYRUN=1 runs the "gpu" side on a second cpu context. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#define SAP_TEST_HAS_GPU_PART 1
#include "testing.h"

#include "precond/pc_sap.h"
#include "matrix/backend_matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef SAP_HAVE_LAPACKE
#include <lapacke.h>
#endif

/* Reference solution of A x = b (K: half-bandwidth): dgbsv, else dense partial pivoting. */
static int reference_solve(const sap_csr *A, sap_int K, const double *b, double *x)
{
    const sap_int n = A->nrows;
#ifdef SAP_HAVE_LAPACKE
    const lapack_int kl = (lapack_int)K, ku = (lapack_int)K, ldab = 2 * kl + ku + 1;
    double *ab = calloc((size_t)ldab * (size_t)n, sizeof(double));
    lapack_int *ipiv = malloc(sizeof(lapack_int) * (size_t)n);
    if (!ab || !ipiv) return -1;
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sap_int j = A->colind[p];
            ab[(kl + ku + i - j) + j * ldab] = A->val[p];
        }
    memcpy(x, b, sizeof(double) * (size_t)n);
    lapack_int info = LAPACKE_dgbsv(LAPACK_COL_MAJOR, (lapack_int)n, kl, ku, 1, ab, ldab, ipiv, x, (lapack_int)n);
    free(ab);
    free(ipiv);
    return (int)info;
#else
    (void)K;
    if (n > 3000) return -2;
    double *D = calloc((size_t)n * (size_t)n, sizeof(double));
    if (!D) return -1;
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) D[i * n + A->colind[p]] = A->val[p];
    memcpy(x, b, sizeof(double) * (size_t)n);
    for (sap_int k = 0; k < n; k++) {
        sap_int pr = k;
        for (sap_int r = k + 1; r < n; r++)
            if (fabs(D[r * n + k]) > fabs(D[pr * n + k])) pr = r;
        if (D[pr * n + k] == 0) {
            free(D);
            return 1;
        }
        if (pr != k) {
            for (sap_int c = 0; c < n; c++) {
                double t = D[k * n + c];
                D[k * n + c] = D[pr * n + c];
                D[pr * n + c] = t;
            }
            double t = x[k];
            x[k] = x[pr];
            x[pr] = t;
        }
        for (sap_int r = k + 1; r < n; r++) {
            double l = D[r * n + k] / D[k * n + k];
            if (l == 0) continue;
            for (sap_int c = k; c < n; c++) D[r * n + c] -= l * D[k * n + c];
            x[r] -= l * x[k];
        }
    }
    for (sap_int k = n - 1; k >= 0; k--) {
        double s = x[k];
        for (sap_int c = k + 1; c < n; c++) s -= D[k * n + c] * x[c];
        x[k] = s / D[k * n + k];
    }
    free(D);
    return 0;
#endif
}

static void make_rhs(const sap_csr *A, double *b, double *xstar)
{
    sap_gen_xstar(A->ctx, A->nrows, SAP_XSTAR_PARABOLA, 1, xstar);
    sap_csr_spmv(A, 1.0, xstar, 0.0, b);
}

/* Solves A x = b with the given method/P and checks the true residual and the distance
 * to the reference solution. */
static void check_solve(sap_context *ctx, const sap_csr *A, sap_int K, sap_band_method method, sap_int P, int prec,
                        const char *label)
{
    const sap_int n = A->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    double *xs = malloc(sizeof(double) * (size_t)n), *xr = malloc(sizeof(double) * (size_t)n);
    make_rhs(A, b, xs);
    int info = reference_solve(A, K, b, xr);
    sap_band_options o;
    sap_band_options_init(&o);
    o.method = method;
    o.partitions = P;
    o.factor_precision = prec;
    o.krylov.maxit = 2000;
    sap_band_solver *S = NULL;
    CHECK_OK(ctx, sap_band_solver_create(ctx, A, &o, &S));
    sap_band_stats st;
    sap_status s = sap_band_solver_solve(S, b, x, &st);
    CHECK_MSG(s == SAP_OK || s == SAP_WARN_BOOSTED_PIVOTS, "%s: %s (%s)", label, sap_status_name(s),
              sap_context_last_error(ctx));
    double rr = sap_test_rel_residual(A, x, b);
    CHECK_MSG(rr <= 1e-10 * 1.0001, "%s: residual %.3g (stats %.3g, it %.2f)", label, rr, st.relative_residual,
              st.iterations);
    if (info == 0) {
        double num = 0, den = 0;
        for (sap_int i = 0; i < n; i++) {
            num += (x[i] - xr[i]) * (x[i] - xr[i]);
            den += xr[i] * xr[i];
        }
        CHECK_MSG(sqrt(num / den) < 1e-5, "%s: differs from dgbsv by %.3g", label, sqrt(num / den));
    }
    if (method != SAP_BAND_AUTO) CHECK_MSG(st.method == method, "%s: method %d", label, (int)st.method);
    if (P > 0) CHECK_MSG(st.partitions == P, "%s: P %lld", label, (long long)st.partitions);
    CHECK(st.reason[0] != 0);
    if (getenv("SAP_TEST_VERBOSE"))
        printf("%-40s P=%3lld it=%6.2f res=%.2e LU %.4f SPK %.4f rdcd %.4f Kry %.4f [%s]\n", label,
               (long long)st.partitions, st.iterations, rr, st.time_lu, st.time_spk, st.time_lurdcd, st.time_kry,
               st.reason);
    sap_band_solver_destroy(S);
    free(b);
    free(x);
    free(xs);
    free(xr);
}

static void test_grid(sap_context *ctx)
{
    static const sap_int Ks[] = {1, 2, 5, 31, 32, 63, 64, 65, 200};
    static const sap_int Ps[] = {1, 2, 7, 50};
    /* d = 0.06 (the papers' hardest case) only with K >= 64: for narrow random bands
     * with so little dominance the unpivoted block factors and truncated spikes are
     * useless (the papers then rely on the reordering stage) */
    static const double ds[] = {1.2, 1.0, 0.3, 0.06};
    static const double ds_narrow[] = {1.2, 1.0, 0.6, 0.3};
    int c = 0;
    for (size_t ik = 0; ik < sizeof(Ks) / sizeof(Ks[0]); ik++)
        for (size_t ip = 0; ip < sizeof(Ps) / sizeof(Ps[0]); ip++) {
            const sap_int K = Ks[ik], P = Ps[ip];
            double d = K >= 64 ? ds[(ik + ip) % 4] : ds_narrow[(ik + ip) % 4];
            if (K < 5 && d < 1.0) d = 1.0; /* tridiagonal-like random bands need dominance */
            /* rows per partition: >= 2K for the low-dominance cases, some uneven sizes */
            sap_int per = d < 0.5 ? 3 * K + 7 : K + 5;
            if (per < 8) per = 8;
            sap_int n = P * per + (P > 1 ? P / 2 + 1 : 3); /* N mod P != 0 */
            if (K >= 200 && P == 50 && d < 0.5) n = 50 * 250 + 13;
            sap_csr *A = NULL;
            CHECK_OK(ctx, sap_gen_banded(ctx, n, K, d, 0, 100 + (uint64_t)c, &A));
            if (!A) continue;
            char label[96];
            snprintf(label, sizeof label, "K=%lld P=%lld d=%.2f N=%lld sap-d", (long long)K, (long long)P, d,
                     (long long)n);
            check_solve(ctx, A, K, SAP_BAND_SAPD, P, -1, label);
            snprintf(label, sizeof label, "K=%lld P=%lld d=%.2f N=%lld sap-c", (long long)K, (long long)P, d,
                     (long long)n);
            check_solve(ctx, A, K, SAP_BAND_SAPC, P, -1, label);
            if (P == 1 || ik % 3 == 0) {
                snprintf(label, sizeof label, "K=%lld d=%.2f N=%lld direct", (long long)K, d, (long long)n);
                check_solve(ctx, A, K, SAP_BAND_DIRECT, 0, -1, label);
            }
            if (ip == 1 && ik % 2 == 0) {
                snprintf(label, sizeof label, "K=%lld P=%lld d=%.2f double sap-c", (long long)K, (long long)P, d);
                check_solve(ctx, A, K, SAP_BAND_SAPC, P, SAP_DOUBLE, label);
                snprintf(label, sizeof label, "K=%lld d=%.2f auto", (long long)K, d);
                check_solve(ctx, A, K, SAP_BAND_AUTO, 0, -1, label);
            }
            sap_csr_destroy(A);
            c++;
        }
}

/* Varying K_i: a block-diagonal-ish matrix whose blocks have different bandwidths, plus a
 * symmetric SPD matrix (CG path). */
static void test_varying_ki(sap_context *ctx)
{
    const sap_int n = 700;
    sap_coo *C = NULL;
    CHECK_OK(ctx, sap_coo_create(ctx, n, n, 0, &C));
    sap_int off[8];
    sap_partition_offsets(n, 7, off);
    uint64_t s = 12345;
    for (sap_int b = 0; b < 7; b++) {
        sap_int Kb = 1 + 4 * b; /* 1, 5, 9, ..., 25 */
        for (sap_int i = off[b]; i < off[b + 1]; i++) {
            double sum = 0;
            for (sap_int j = i - Kb; j <= i + Kb; j++) {
                if (j == i || j < off[b] || j >= off[b + 1]) continue;
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                double v = (double)(s >> 11) * 0x1.0p-53 * 2 - 1;
                sap_coo_push(C, i, j, v);
                sum += fabs(v);
            }
            /* weak coupling to the neighbouring blocks */
            if (i + 3 < n && i + 3 >= off[b + 1]) sap_coo_push(C, i, i + 3, 0.25), sum += 0.25;
            if (i - 3 >= 0 && i - 3 < off[b]) sap_coo_push(C, i, i - 3, -0.25), sum += 0.25;
            sap_coo_push(C, i, i, 0.8 * sum + 0.1);
        }
    }
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_csr_from_coo(C, &A));
    sap_coo_destroy(C);
    if (A) {
        check_solve(ctx, A, 25, SAP_BAND_SAPD, 7, -1, "varying K_i sap-d");
        check_solve(ctx, A, 25, SAP_BAND_SAPC, 7, -1, "varying K_i sap-c");
        check_solve(ctx, A, 25, SAP_BAND_SAPC, 7, SAP_DOUBLE, "varying K_i sap-c double");
        /* truncation exact: the blocks couple only through K = 3 < n_i entries */
        sap_band_options o;
        sap_band_options_init(&o);
        o.method = SAP_BAND_SAPC;
        o.partitions = 7;
        o.factor_precision = SAP_DOUBLE;
        sap_band_solver *S = NULL;
        CHECK_OK(ctx, sap_band_solver_create(ctx, A, &o, &S));
        CHECK_OK(ctx, sap_band_solver_setup(S));
        sap_band_stats st;
        CHECK_OK(ctx, sap_band_solver_get_stats(S, &st));
        CHECK(st.half_bandwidth == 25);
        CHECK(st.dropped_entries == 0);
        sap_band_solver_destroy(S);
    }
    sap_csr_destroy(A);
    /* SPD: CG with SaP-D */
    sap_csr *Sy = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 900, 20, 1.5, 1, 77, &Sy));
    if (Sy) {
        check_solve(ctx, Sy, 20, SAP_BAND_SAPD, 4, -1, "spd sap-d (cg)");
        sap_band_options o;
        sap_band_options_init(&o);
        o.method = SAP_BAND_SAPD;
        sap_band_solver *S = NULL;
        CHECK_OK(ctx, sap_band_solver_create(ctx, Sy, &o, &S));
        CHECK_OK(ctx, sap_band_solver_setup(S));
        sap_band_stats st;
        sap_band_solver_get_stats(S, &st);
        CHECK(st.krylov_type == SAP_KRYLOV_CG);
        sap_band_solver_destroy(S);
    }
    sap_csr_destroy(Sy);
}

/* Zero pivots: a matrix whose leading entries are 0 (nonsingular through the band). */
static void test_boosting(sap_context *ctx)
{
    const sap_int n = 300, K = 3;
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, n, K, 1.0, 0, 5, &A));
    if (!A) return;
    /* zero the diagonal of every 37th row */
    sap_int zeros = 0;
    for (sap_int i = 0; i < n; i += 37)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] == i) A->val[p] = 0, zeros++;
    for (int m = 0; m < 3; m++) {
        sap_band_options o;
        sap_band_options_init(&o);
        o.method = m == 0 ? SAP_BAND_SAPD : m == 1 ? SAP_BAND_SAPC : SAP_BAND_DIRECT;
        o.partitions = m == 2 ? 0 : 3;
        o.boost_value = 1e-3;
        sap_band_solver *S = NULL;
        CHECK_OK(ctx, sap_band_solver_create(ctx, A, &o, &S));
        CHECK_STATUS(ctx, sap_band_solver_setup(S), SAP_WARN_BOOSTED_PIVOTS);
        double *b = malloc(sizeof(double) * n), *x = calloc(n, sizeof(double)), *xs = malloc(sizeof(double) * n);
        make_rhs(A, b, xs);
        sap_band_stats st;
        sap_status s = sap_band_solver_solve(S, b, x, &st);
        CHECK_MSG(st.boosted_pivots >= 1, "boosted %lld", (long long)st.boosted_pivots);
        CHECK_MSG(s == SAP_OK || s == SAP_WARN_BOOSTED_PIVOTS, "boost %d: %s", m, sap_status_name(s));
        CHECK_MSG(sap_test_rel_residual(A, x, b) <= 1.0001e-10, "boost %d: residual %.3g", m, sap_test_rel_residual(A, x, b));
        free(b);
        free(x);
        free(xs);
        sap_band_solver_destroy(S);
    }
    (void)zeros;
    sap_csr_destroy(A);
}

static void test_band_arrays(sap_context *ctx)
{
    const sap_int n = 400, K = 4;
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, n, K, 1.0, 0, 9, &A));
    if (!A) return;
    double *band = calloc((size_t)(2 * K + 1) * n, sizeof(double));
    for (sap_int i = 0; i < n; i++)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            band[(A->colind[p] - i + K) * n + i] = A->val[p];
    double *b = malloc(sizeof(double) * n), *x = calloc(n, sizeof(double)), *xs = malloc(sizeof(double) * n);
    make_rhs(A, b, xs);
    sap_band_options o;
    sap_band_options_init(&o);
    o.partitions = 5;
    o.method = SAP_BAND_SAPC;
    sap_band_solver *S = NULL;
    CHECK_OK(ctx, sap_band_solver_create_band(ctx, n, K, band, &o, &S));
    CHECK_OK(ctx, sap_band_solver_solve(S, b, x, NULL));
    CHECK(sap_test_rel_residual(A, x, b) <= 1.0001e-10);
    sap_band_solver_destroy(S);
    /* a cap below the bandwidth drops entries (preconditioner only) */
    o.half_bandwidth = 2;
    CHECK_OK(ctx, sap_band_solver_create(ctx, A, &o, &S));
    memset(x, 0, sizeof(double) * n);
    sap_band_stats st;
    CHECK_OK(ctx, sap_band_solver_solve(S, b, x, &st));
    CHECK(st.dropped_entries > 0);
    CHECK(st.half_bandwidth == 2);
    CHECK(sap_test_rel_residual(A, x, b) <= 1.0001e-10);
    sap_band_solver_destroy(S);
    free(band);
    free(b);
    free(x);
    free(xs);
    sap_csr_destroy(A);
}

static void test_bad_input(sap_context *ctx)
{
    sap_band_solver *S = NULL;
    sap_csr *R = NULL, *A = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, 3, 4, 0, &R));
    CHECK_STATUS(ctx, sap_band_solver_create(ctx, R, NULL, &S), SAP_ERR_NOT_SQUARE);
    CHECK(S == NULL);
    sap_csr_destroy(R);
    CHECK_OK(ctx, sap_gen_banded(ctx, 20, 2, 1.0, 0, 3, &A));
    sap_band_options o;
    sap_band_options_init(&o);
    o.partitions = 21;
    CHECK_STATUS(ctx, sap_band_solver_create(ctx, A, &o, &S), SAP_ERR_INVALID);
    o.partitions = -1;
    CHECK_STATUS(ctx, sap_band_solver_create(ctx, A, &o, &S), SAP_ERR_INVALID);
    sap_band_options_init(&o);
    o.half_bandwidth = 20;
    CHECK_STATUS(ctx, sap_band_solver_create(ctx, A, &o, &S), SAP_ERR_INVALID);
    o.half_bandwidth = 0;
    o.method = (sap_band_method)9;
    CHECK_STATUS(ctx, sap_band_solver_create(ctx, A, &o, &S), SAP_ERR_INVALID);
    o.method = SAP_BAND_AUTO;
    o.factor_precision = 5;
    CHECK_STATUS(ctx, sap_band_solver_create(ctx, A, &o, &S), SAP_ERR_INVALID);
    double band[9] = {0};
    CHECK_STATUS(ctx, sap_band_solver_create_band(ctx, 3, 3, band, NULL, &S), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_band_solver_create_band(ctx, 3, 1, NULL, NULL, &S), SAP_ERR_INVALID);
    A->val[5] = NAN;
    CHECK_STATUS(ctx, sap_band_solver_create(ctx, A, NULL, &S), SAP_ERR_NONFINITE);
    A->val[5] = 0.5;
    /* NaN in b */
    CHECK_OK(ctx, sap_band_solver_create(ctx, A, NULL, &S));
    double b[20], x[20] = {0};
    for (int i = 0; i < 20; i++) b[i] = 1;
    b[3] = NAN;
    CHECK_STATUS(ctx, sap_band_solver_solve(S, b, x, NULL), SAP_ERR_NONFINITE);
    CHECK_STATUS(ctx, sap_band_solver_solve(S, NULL, x, NULL), SAP_ERR_INVALID);
    sap_band_solver_destroy(S);
    S = NULL;
    sap_band_options_init(&o);
    o.method = SAP_BAND_DIRECT;
    CHECK_OK(ctx, sap_band_solver_create(ctx, A, &o, &S));
    CHECK_STATUS(ctx, sap_band_solver_solve(S, b, x, NULL), SAP_ERR_NONFINITE);
    sap_band_solver_destroy(S);
    /* names */
    sap_band_method m;
    CHECK_OK(ctx, sap_band_method_parse("sap-c", &m));
    CHECK(m == SAP_BAND_SAPC);
    CHECK_STATUS(ctx, sap_band_method_parse("spike", &m), SAP_ERR_INVALID);
    CHECK(strcmp(sap_band_method_name(SAP_BAND_SAPD), "sap-d") == 0);
    sap_band_solver_destroy(NULL);
    CHECK_STATUS(ctx, sap_band_solver_setup(NULL), SAP_ERR_INVALID);
    sap_csr_destroy(A);
}

/* The registered preconditioners through the generic API. */
static void test_precond_api(sap_context *ctx)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 500, 6, 1.0, 0, 21, &A));
    if (!A) return;
    const char *names[] = {"sap-d", "sap-c", "sap"};
    for (int i = 0; i < 3; i++) {
        sap_precond *P = NULL;
        CHECK_OK(ctx, sap_precond_create(ctx, names[i], &P));
        if (!P) continue;
        CHECK(strcmp(sap_precond_name(P), names[i]) == 0);
        CHECK_OK(ctx, sap_precond_set_precision(P, i == 1 ? SAP_FLOAT : SAP_DOUBLE));
        CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
        sap_matrix *M = NULL;
        sap_krylov *Kr = NULL;
        CHECK_OK(ctx, sap_matrix_create(ctx, A, NULL, &M));
        CHECK_OK(ctx, sap_krylov_create(ctx, NULL, &Kr));
        double b[500], x[500] = {0}, xs[500];
        make_rhs(A, b, xs);
        sap_krylov_stats ks;
        CHECK_OK(ctx, sap_krylov_solve(Kr, M, P, b, x, &ks));
        CHECK(ks.true_residual <= 1e-10);
        sap_band_stats bs;
        CHECK_OK(ctx, sap_precond_get_band_stats(P, &bs));
        CHECK(bs.partitions >= 1 && bs.half_bandwidth == 6 && bs.reason[0]);
        CHECK(bs.factor_precision == (i == 1 ? SAP_FLOAT : SAP_DOUBLE));
        if (i == 0) CHECK(bs.method == SAP_BAND_SAPD);
        if (i == 1) CHECK(bs.method == SAP_BAND_SAPC);
        sap_krylov_destroy(Kr);
        sap_matrix_destroy(M);
        sap_precond_destroy(P);
    }
    /* partitions through the options; a non-SaP preconditioner refuses them */
    sap_precond *P = NULL;
    CHECK_OK(ctx, sap_precond_create(ctx, "sap-c", &P));
    sap_band_options o;
    sap_band_options_init(&o);
    o.partitions = 5;
    CHECK_OK(ctx, sap_precond_set_band_options(P, &o));
    CHECK_OK(ctx, sap_precond_setup_numeric(P, A));
    sap_band_stats bs;
    CHECK_OK(ctx, sap_precond_get_band_stats(P, &bs));
    CHECK(bs.partitions == 5);
    o.partitions = 501;
    CHECK_OK(ctx, sap_precond_set_band_options(P, &o));
    CHECK_STATUS(ctx, sap_precond_setup_numeric(P, A), SAP_ERR_INVALID);
    sap_precond_destroy(P);
    CHECK_OK(ctx, sap_precond_create(ctx, "jacobi", &P));
    CHECK_STATUS(ctx, sap_precond_set_band_options(P, &o), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_precond_get_band_stats(P, &bs), SAP_ERR_INVALID);
    sap_precond_destroy(P);
    sap_csr_destroy(A);
}

static void test_oom(void)
{
    for (int m = 0; m < 3; m++) {
        int done = 0;
        for (long k = 0; k < 400 && !done; k++) {
            sap_test_failing_alloc state = {-1, 0, 0};
            sap_context *ctx = sap_test_failing_context(&state);
            if (!ctx) {
                CHECK(0);
                return;
            }
            sap_csr *A = NULL;
            sap_gen_banded(ctx, 120, 3, 0.8, 0, 4, &A);
            state.fail_at = state.count + k;
            sap_band_options o;
            sap_band_options_init(&o);
            o.method = m == 0 ? SAP_BAND_SAPD : m == 1 ? SAP_BAND_SAPC : SAP_BAND_DIRECT;
            o.partitions = m == 2 ? 0 : 3;
            sap_band_solver *S = NULL;
            double b[120], x[120];
            for (int i = 0; i < 120; i++) b[i] = 1, x[i] = 0;
            sap_status st = sap_band_solver_create(ctx, A, &o, &S);
            if (st == SAP_OK) st = sap_band_solver_solve(S, b, x, NULL);
            CHECK_MSG(st == SAP_OK || st == SAP_ERR_OUT_OF_MEMORY, "oom m=%d k=%ld: %s", m, k, sap_status_name(st));
            if (st == SAP_OK) done = 1;
            sap_band_solver_destroy(S);
            sap_csr_destroy(A);
            sap_context_destroy(ctx);
            CHECK_MSG(state.live == 0, "leak: %ld blocks (m %d, fail at %ld)", state.live, m, k);
        }
        CHECK(done);
    }
}

/* The factors filled from a BAND matrix on the backend (the band solver's path) equal the
 * ones built from the CSR on the host: bit-identical preconditioner applies. */
static void test_band_source(sap_context *ctx)
{
    const struct {
        sap_int n, K, P, cap;
        double d;
    } cases[] = {{1000, 7, 7, 0, 1.0}, {1000, 31, 5, 0, 0.3}, {777, 12, 3, 8, 1.0}, {300, 40, 2, 0, 0.5}, {64, 5, 1, 0, 1.0}};
    const size_t ncase = sizeof(cases) / sizeof(cases[0]);
    for (size_t c = 0; c < ncase + 2; c++) {
        sap_csr *A = NULL;
        if (c < ncase) {
            CHECK_OK(ctx, sap_gen_banded(ctx, cases[c].n, cases[c].K, cases[c].d, 0, 9 + c, &A));
        } else { /* an irregular band (rows of varying extent, holes): the row-end layout's searches */
            const sap_int n = c == ncase ? 900 : 257, K = c == ncase ? 30 : 9;
            sap_coo *C = NULL;
            CHECK_OK(ctx, sap_coo_create(ctx, n, n, n * (2 * K + 1), &C));
            uint64_t h = 0x9E3779B97F4A7C15ull + c;
            for (sap_int i = 0; C && i < n; i++) {
                double off = 0;
                for (sap_int j = i - K; j <= i + K; j++) {
                    h ^= h << 13;
                    h ^= h >> 7;
                    h ^= h << 17;
                    if (j < 0 || j >= n || j == i || h % 3 == 0) continue;
                    const double v = (double)(h % 1000) / 1000.0 - 0.5;
                    off += fabs(v);
                    sap_coo_push(C, i, j, v);
                }
                sap_coo_push(C, i, i, 1.0 + off);
            }
            if (C) CHECK_OK(ctx, sap_csr_from_coo(C, &A));
            sap_coo_destroy(C);
        }
        if (!A) continue;
        const sap_int cP = c < ncase ? cases[c].P : (c == ncase ? 6 : 3), ccap = c < ncase ? cases[c].cap : (c == ncase ? 20 : 0);
        sap_matrix_options mo;
        sap_matrix_options_init(&mo);
        mo.format = SAP_FORMAT_BAND;
        sap_matrix *M = NULL;
        CHECK_OK(ctx, sap_matrix_create(ctx, A, &mo, &M));
        sap_band_source src;
        memset(&src, 0, sizeof(src));
        const void *bv = NULL;
        if (M) CHECK_OK(ctx, sap__ops(ctx)->spmat_band(M->sm, &bv, &src.kl, &src.w));
        src.val = bv;
        const sap_int n = A->nrows;
        double *r = malloc(sizeof(double) * (size_t)n), *z1 = malloc(sizeof(double) * (size_t)n),
               *z2 = malloc(sizeof(double) * (size_t)n);
        for (sap_int i = 0; i < n; i++) r[i] = sin(0.37 * (double)i) + 0.5;
        for (int m = 0; m < 2 && src.val; m++)
            for (int prec = 0; prec < 2; prec++) {
                sap_precond *P1 = NULL, *P2 = NULL;
                sap_band_options o;
                sap_band_options_init(&o);
                o.partitions = cP;
                o.half_bandwidth = ccap;
                const char *name = m ? "sap-c" : "sap-d";
                CHECK_OK(ctx, sap_precond_create(ctx, name, &P1));
                CHECK_OK(ctx, sap_precond_create(ctx, name, &P2));
                if (!P1 || !P2) {
                    sap_precond_destroy(P1);
                    sap_precond_destroy(P2);
                    continue;
                }
                CHECK_OK(ctx, sap_precond_set_band_options(P1, &o));
                CHECK_OK(ctx, sap_precond_set_band_options(P2, &o));
                sap_precond_set_precision(P1, prec ? SAP_FLOAT : SAP_DOUBLE);
                sap_precond_set_precision(P2, prec ? SAP_FLOAT : SAP_DOUBLE);
                /* canonical = 0 and 1 (the layout from row ends, no shape pass): the same */
                for (int canon = 0; canon < 2; canon++) {
                    src.canonical = canon;
                    CHECK_OK(ctx, sap__pc_sap_set_source(P2, &src));
                    sap_status s1 = sap_precond_setup_numeric(P1, A), s2 = sap_precond_setup_numeric(P2, A);
                    CHECK_MSG(s1 >= 0 && s1 == s2, "band source case %zu %s canonical %d: setup %s vs %s", c, name, canon,
                              sap_status_name(s1), sap_status_name(s2));
                    if (s1 >= 0 && s2 >= 0) {
                        sap_band_stats b1, b2;
                        sap_precond_get_band_stats(P1, &b1);
                        sap_precond_get_band_stats(P2, &b2);
                        CHECK(b1.dropped_entries == b2.dropped_entries && b1.boosted_pivots == b2.boosted_pivots &&
                              b1.half_bandwidth == b2.half_bandwidth && b1.partitions == b2.partitions);
                        CHECK_OK(ctx, sap_precond_apply(P1, r, z1));
                        CHECK_OK(ctx, sap_precond_apply(P2, r, z2));
                        CHECK_MSG(memcmp(z1, z2, sizeof(double) * (size_t)n) == 0,
                                  "band source case %zu %s %s canonical %d: applies differ", c, name,
                                  prec ? "float" : "double", canon);
                    }
                }
                sap_precond_destroy(P1);
                sap_precond_destroy(P2);
            }
        free(r);
        free(z1);
        free(z2);
        sap_matrix_destroy(M);
        sap_csr_destroy(A);
    }
}

/* sap__band_fact_bytes against what sap__band_fact_create takes: on the cpu its host peak
 * (the backend arrays are host memory there) within dev + host; on cuda the device
 * blocks' peak (device_block_bytes_peak: pool size classes) within dev and the host peak
 * within host.  The bound also stays within twice the measure (an estimate that is far
 * too large narrows K for nothing). */
static void check_bytes_bound(sap_context *ctx, sap_int n, sap_int K, sap_int P, int coupled, sap_precision prec,
                              int narrow)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, n, K, 1.0, 0, (uint64_t)(7 + K), &A));
    if (!A) return;
    sap_band_factor_opts fo = {-1.0, 0.0, coupled, SAP_BAND_KERNEL_AUTO};
    sap_context_stats s0, s1;
    sap_context_reset_peak_stats(ctx);
    sap_context_get_stats(ctx, &s0);
    sap_band_fact *F = NULL;
    sap_int dropped = 0;
    double tbc = 0;
    /* narrow: the layout's band capped below the matrix' (a dropped band) */
    sap_status st = sap__band_fact_create(ctx, A, P, narrow ? K / 2 : 0, prec, &fo, 0, &F, &dropped, &tbc);
    CHECK_MSG(st >= 0, "band bytes N=%lld K=%lld P=%lld: %s (%s)", (long long)n, (long long)K, (long long)P,
              sap_status_name(st), sap_context_last_error(ctx));
    sap_context_get_stats(ctx, &s1);
    double dev = 0, host = 0;
    sap__band_fact_bytes(ctx, n, P, narrow ? K / 2 : K, prec, coupled, 0, &dev, &host);
    const double hpeak = (double)(s1.host_bytes_peak - s0.host_bytes_in_use);
    const double dpeak = (double)(s1.device_block_bytes_peak - s0.device_block_bytes);
    const int cuda = sap_context_backend(ctx) == SAP_BACKEND_CUDA;
    char label[96];
    snprintf(label, sizeof(label), "N=%lld K=%lld%s P=%lld %s %s", (long long)n, (long long)K, narrow ? "/2" : "",
             (long long)P, coupled ? "sap-c" : "sap-d", prec == SAP_FLOAT ? "float" : "double");
    if (cuda) {
        CHECK_MSG(dpeak <= dev, "%s: device peak %.0f > bound %.0f", label, dpeak, dev);
        CHECK_MSG(hpeak <= host, "%s: host peak %.0f > bound %.0f", label, hpeak, host);
        CHECK_MSG(dev <= 2.0 * dpeak + 65536.0, "%s: device bound %.0f, twice the peak %.0f", label, dev, dpeak);
    } else {
        CHECK_MSG(hpeak <= dev + host, "%s: host peak %.0f > bound %.0f + %.0f", label, hpeak, dev, host);
        CHECK_MSG(dev + host <= 2.0 * hpeak + 65536.0, "%s: bound %.0f, twice the peak %.0f", label, dev + host,
                  hpeak);
    }
    printf("band bytes %-36s bound dev %.0f host %.0f, peak %s %.0f host %.0f\n", label, dev, host,
           cuda ? "device" : "-", dpeak, hpeak);
    sap__band_fact_destroy(F);
    sap_csr_destroy(A);
}

static void test_bytes_bound(sap_context *ctx)
{
    static const struct {
        sap_int n, K, P;
    } cases[] = {{1000, 3, 1}, {5000, 20, 7}, {20000, 60, 16}, {3001, 100, 3}, {200, 50, 4}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int coupled = 0; coupled < 2; coupled++)
            for (int p = 0; p < 2; p++)
                if (!sap_test_tiny() || cases[c].n * cases[c].K <= 10000) /* racecheck: the small ones */
                    check_bytes_bound(ctx, cases[c].n, cases[c].K, cases[c].P, coupled, p ? SAP_DOUBLE : SAP_FLOAT,
                                  c == 2 && coupled);
}

/* z = M^{-1} r with the named preconditioner on ctx. */
static sap_status pc_apply(sap_context *ctx, const sap_csr *A, const char *name, sap_int P, sap_precision prec,
                           const double *r, double *z, sap_band_stats *bs)
{
    sap_precond *pc = NULL;
    sap_status st = sap_precond_create(ctx, name, &pc);
    sap_band_options o;
    sap_band_options_init(&o);
    o.partitions = P;
    if (st >= 0) st = sap_precond_set_band_options(pc, &o);
    if (st >= 0) st = sap_precond_set_precision(pc, prec);
    if (st >= 0) st = sap_precond_setup_numeric(pc, A);
    if (st >= 0) {
        sap_status s2 = sap_precond_apply(pc, r, z);
        if (s2 < 0) st = s2;
    }
    if (st >= 0 && bs) sap_precond_get_band_stats(pc, bs);
    sap_precond_destroy(pc);
    return st;
}

/* The blocked LU (SAP_BAND_FACTOR=blocked) and, SaP-C on cuda, the blocked spikes
 * (SAP_BAND_SPIKES=blocked: batched TRSM; the cpu has one kind) against the per-row ones
 * on the same context (the preconditioner applied to one vector: SaP-D's block solve,
 * SaP-C's spikes and reduced systems on top), the boosted-pivot counts, and, ref != NULL, the cpu per-row
 * apply; for one partition without boosting, the apply against LAPACK's dgbsv.  zero: the
 * diagonal of every 97th row is zeroed (pivots boosted, the first one exactly zero). */
static void blocked_case(sap_context *ctx, sap_context *ref, sap_int n, sap_int K, sap_int P, int coupled,
                         sap_precision prec, int zero)
{
    char label[128];
    snprintf(label, sizeof label, "blocked N=%lld K=%lld P=%lld %s %s%s", (long long)n, (long long)K, (long long)P,
             coupled ? "sap-c" : "sap-d", prec == SAP_FLOAT ? "float" : "double", zero ? " zero pivots" : "");
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, n, K, coupled ? 0.6 : 1.0, 0, (uint64_t)(5 * n + K), &A));
    if (!A) return;
    if (zero)
        for (sap_int i = 0; i < n; i += 97)
            for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                if (A->colind[p] == i) A->val[p] = 0;
    double *r = malloc(sizeof(double) * n), *z[3] = {malloc(sizeof(double) * n), malloc(sizeof(double) * n),
                                                      malloc(sizeof(double) * n)};
    for (sap_int i = 0; i < n; i++) r[i] = sin(0.37 * (double)i) + 0.5;
    const char *name = coupled ? "sap-c" : "sap-d";
    sap_band_stats bs[3];
    memset(bs, 0, sizeof bs);
    sap_status st[3] = {SAP_OK, SAP_OK, SAP_OK};
    setenv("SAP_BAND_FACTOR", "rows", 1);
    setenv("SAP_BAND_SPIKES", "rows", 1);
    setenv("SAP_BAND_RDCD", "kernel", 1); /* cuda: the reduced systems' LU a block each */
    st[0] = pc_apply(ctx, A, name, P, prec, r, z[0], &bs[0]);
    if (ref) st[2] = pc_apply(ref, A, name, P, prec, r, z[2], &bs[2]);
    unsetenv("SAP_BAND_RDCD"); /* the automatic choice: cuSOLVER's getrf for the wide ones */
    setenv("SAP_BAND_FACTOR", "blocked", 1);
    setenv("SAP_BAND_SPIKES", "blocked", 1);
    st[1] = pc_apply(ctx, A, name, P, prec, r, z[1], &bs[1]);
    unsetenv("SAP_BAND_FACTOR");
    unsetenv("SAP_BAND_SPIKES");
    CHECK_MSG(st[0] >= 0 && st[1] >= 0 && st[2] >= 0, "%s: rows %s blocked %s ref %s (%s)", label,
              sap_status_name(st[0]), sap_status_name(st[1]), sap_status_name(st[2]), sap_context_last_error(ctx));
    /* the cpu's blocked kernels are LAPACK's BLAS: without it the cpu has none */
    const int has_blocked = sap_context_backend(ctx) != SAP_BACKEND_CPU || sap_has_feature("lapack");
    CHECK_MSG(!strstr(bs[0].reason, "LU blocked") && (strstr(bs[1].reason, "LU blocked") != NULL) == has_blocked,
              "%s: reasons [%s] [%s]", label, bs[0].reason, bs[1].reason);
    /* boosted factors amplify their rounding (a boost of sqrt(eps) ||A||: growth ~1e4 in
     * float, ~1e8 in double), so there the two orders of operations agree in the boosted
     * counts only (float) or to 1e-7 (double) */
    const double tol = prec == SAP_FLOAT ? 1e-3 : zero ? 1e-7 : 1e-9;
    const int values = !(zero && prec == SAP_FLOAT);
    for (int v = 0; v < (ref ? 2 : 1) && st[1] >= 0; v++) {
        const double *zr = z[v == 0 ? 0 : 2];
        double num = 0, den = 0;
        for (sap_int i = 0; i < n; i++) {
            num += (z[1][i] - zr[i]) * (z[1][i] - zr[i]);
            den += zr[i] * zr[i];
        }
        CHECK_MSG(!values || sqrt(num / den) <= tol, "%s: blocked apply differs from the %s per-row one by %.3g", label,
                  v ? "reference context's" : "same context's", sqrt(num / den));
        CHECK_MSG(bs[1].boosted_pivots == bs[v ? 2 : 0].boosted_pivots, "%s: boosted %lld vs %lld", label,
                  (long long)bs[1].boosted_pivots, (long long)bs[v ? 2 : 0].boosted_pivots);
    }
    if (zero) CHECK_MSG(bs[1].boosted_pivots > 0, "%s: no pivot boosted", label);
    if (P == 1 && !zero && st[1] >= 0) {
        double *xr = malloc(sizeof(double) * n);
        if (reference_solve(A, K, r, xr) == 0) {
            double num = 0, den = 0;
            for (sap_int i = 0; i < n; i++) {
                num += (z[1][i] - xr[i]) * (z[1][i] - xr[i]);
                den += xr[i] * xr[i];
            }
            CHECK_MSG(sqrt(num / den) <= tol, "%s: blocked LU solve differs from dgbsv by %.3g", label,
                      sqrt(num / den));
        }
        free(xr);
    }
    free(r);
    for (int v = 0; v < 3; v++) free(z[v]);
    sap_csr_destroy(A);
}

/* Partitions of different K_i, some of them diagonal (K_i = 0) with zero pivots past their
 * first row: the shared-memory LU of short partitions (cuda's k_blk_small, which updates
 * only the K_i x K_i window of each pivot) must still visit, and boost, every pivot of a
 * partition with no window at all.  Blocked against per-row on ctx, and against ref's
 * per-row apply when given; float and double, SaP-D and SaP-C. */
static void blocked_diagonal_case(sap_context *ctx, sap_context *ref)
{
    const sap_int n = 1000, half = 500;
    sap_csr *A = NULL;
    sap_int nnz = 0;
    for (sap_int i = 0; i < n; i++) nnz += i < half ? 1 : 11;
    CHECK_OK(ctx, sap_csr_create(ctx, n, n, nnz, &A));
    if (!A) return;
    sap_int p = 0;
    for (sap_int i = 0; i < n; i++) {
        A->rowptr[i] = p;
        if (i < half) { /* diagonal rows; zero pivots at rows 3, 130 and 262 */
            A->colind[p] = i;
            A->val[p++] = (i == 3 || i == 130 || i == 262) ? 0.0 : 1.0 + (double)(i % 5);
            continue;
        }
        for (sap_int j = i - 5; j <= i + 5; j++) {
            if (j < half || j >= n) continue;
            A->colind[p] = j;
            A->val[p++] = j == i ? 12.0 : -1.0 + 0.1 * (double)((i + j) % 3);
        }
    }
    A->rowptr[n] = p;
    A->nnz = p;
    double *r = malloc(sizeof(double) * n), *z[3] = {malloc(sizeof(double) * n), malloc(sizeof(double) * n),
                                                      malloc(sizeof(double) * n)};
    for (sap_int i = 0; i < n; i++) r[i] = cos(0.21 * (double)i) + 0.25;
    for (int c = 0; c < 4; c++) {
        const char *name = (c & 1) ? "sap-c" : "sap-d";
        const sap_precision prec = (c & 2) ? SAP_DOUBLE : SAP_FLOAT;
        sap_band_stats bs[3];
        memset(bs, 0, sizeof bs);
        sap_status st[3] = {SAP_OK, SAP_OK, SAP_OK};
        setenv("SAP_BAND_FACTOR", "rows", 1);
        st[0] = pc_apply(ctx, A, name, 8, prec, r, z[0], &bs[0]);
        if (ref) st[2] = pc_apply(ref, A, name, 8, prec, r, z[2], &bs[2]);
        setenv("SAP_BAND_FACTOR", "blocked", 1);
        st[1] = pc_apply(ctx, A, name, 8, prec, r, z[1], &bs[1]);
        unsetenv("SAP_BAND_FACTOR");
        CHECK_MSG(st[0] >= 0 && st[1] >= 0 && st[2] >= 0, "diagonal partitions %s %s: %s %s %s", name,
                  prec == SAP_FLOAT ? "float" : "double", sap_status_name(st[0]), sap_status_name(st[1]),
                  sap_status_name(st[2]));
        if (st[0] < 0 || st[1] < 0 || st[2] < 0) continue;
        /* the 3 zero pivots of the LU (SaP-C: and those its UL windows meet again) */
        CHECK_MSG(bs[0].boosted_pivots >= 3 && bs[1].boosted_pivots == bs[0].boosted_pivots &&
                      (!ref || bs[2].boosted_pivots == bs[0].boosted_pivots),
                  "diagonal partitions %s: boosted rows %lld blocked %lld ref %lld (3 zero pivots)", name,
                  (long long)bs[0].boosted_pivots, (long long)bs[1].boosted_pivots, (long long)bs[2].boosted_pivots);
        double num = 0, den = 0, numr = 0;
        for (sap_int i = 0; i < n; i++) {
            num += (z[1][i] - z[0][i]) * (z[1][i] - z[0][i]);
            if (ref) numr += (z[1][i] - z[2][i]) * (z[1][i] - z[2][i]);
            den += z[0][i] * z[0][i];
        }
        const double tol = prec == SAP_FLOAT ? 1e-5 : 1e-12;
        CHECK_MSG(isfinite(den) && sqrt(num / den) <= tol && sqrt(numr / den) <= tol,
                  "diagonal partitions %s %s: blocked vs rows %.3g, vs ref %.3g", name,
                  prec == SAP_FLOAT ? "float" : "double", sqrt(num / den), sqrt(numr / den));
    }
    free(r);
    for (int v = 0; v < 3; v++) free(z[v]);
    sap_csr_destroy(A);
}

/* A singular reduced system: A = [I I; I I] (n = 2 m, m = 40) in two partitions has
 * V = W = I, so R = I - W V = 0, and LAPACK's / cuSOLVER's getrf (asked: SAP_BAND_RDCD=
 * solver on cuda; the cpu takes getrf from m = 32) meets exact zero pivots.  The interface
 * must then be refactored with the pivots set to 1 (the preconditioner stays usable): a
 * finite apply, and on cuda the cpu's (ref) values. */
static void singular_reduced_case(sap_context *ctx, sap_context *ref)
{
    const sap_int m = 40, n = 2 * m;
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, n, n, 2 * n, &A));
    if (!A) return;
    for (sap_int i = 0; i < n; i++) {
        const sap_int j = i < m ? i + m : i - m;
        A->rowptr[i] = 2 * i;
        A->colind[2 * i] = i < j ? i : j;
        A->colind[2 * i + 1] = i < j ? j : i;
        A->val[2 * i] = A->val[2 * i + 1] = 1.0;
    }
    A->rowptr[n] = 2 * n;
    double r[80], z[2][80];
    for (sap_int i = 0; i < n; i++) r[i] = 1.0 + 0.01 * (double)i;
    for (int p = 0; p < 2; p++) {
        const sap_precision prec = p ? SAP_DOUBLE : SAP_FLOAT;
        setenv("SAP_BAND_RDCD", "solver", 1);
        sap_status st = pc_apply(ctx, A, "sap-c", 2, prec, r, z[0], NULL);
        sap_status st2 = ref ? pc_apply(ref, A, "sap-c", 2, prec, r, z[1], NULL) : SAP_OK;
        unsetenv("SAP_BAND_RDCD");
        CHECK_MSG(st >= 0 && st2 >= 0, "singular reduced system %s: %s %s (%s)", p ? "double" : "float",
                  sap_status_name(st), sap_status_name(st2), sap_context_last_error(ctx));
        if (st < 0 || st2 < 0) continue;
        double diff = 0, nrm = 0;
        int finite = 1;
        for (sap_int i = 0; i < n; i++) {
            finite &= isfinite(z[0][i]);
            if (ref) diff = fmax(diff, fabs(z[0][i] - z[1][i]));
            nrm = fmax(nrm, fabs(z[0][i]));
        }
        CHECK_MSG(finite && nrm > 0, "singular reduced system %s: apply not finite", p ? "double" : "float");
        CHECK_MSG(diff <= (p ? 1e-12 : 1e-5) * nrm, "singular reduced system %s: %.3g from the cpu's",
                  p ? "double" : "float", diff / nrm);
    }
    sap_csr_destroy(A);
}

/* K from 1 to 600, N a multiple of neither K nor the column block, P from 1 to 64 */
static void blocked_cases(sap_context *ctx, sap_context *ref, int tiny)
{
    static const struct {
        sap_int n, K, P;
    } cases[] = {{1000, 1, 3},   {2003, 7, 64}, {3001, 33, 1},  {2001, 65, 5},  {4097, 100, 64},
                 {5003, 257, 7}, {1501, 599, 2}, {7001, 600, 64}, {3203, 600, 1}, {129, 64, 1}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        if (tiny && cases[c].n * cases[c].K > 200000) continue;
        for (int p = 0; p < 2; p++)
            blocked_case(ctx, ref, cases[c].n, cases[c].K, cases[c].P, (int)(c & 1), p ? SAP_DOUBLE : SAP_FLOAT,
                         (int)(c % 3 == 2));
    }
}

/* ---- sap__band_fact_apply_many: k columns in one pass over the factors -------------------
 * On ctx's backend, factors of a random band (SaP-D and SaP-C), k random columns applied at
 * once against k calls of sap__band_fact_apply on the same factors, k = 1, 2, 3, 7, 32
 * (32: the cuda sweeps' unknowns in global memory where they no longer fit in shared
 * memory); SaP-D also in place (z = r).  The order of operations may differ (cuda: the
 * per-step sweeps' unknowns in global memory take the D^{-1} U backward form where one
 * column fits in shared memory): relative max-norm per column to 1e-12 (double) / 5e-5
 * (float; 1.5e-5 measured on an H100 at N = 400, K = 1, SaP-C, k = 32, per-step). */
static void apply_many_case(sap_context *ctx, const char *mode, sap_int n, sap_int K, sap_int P, int coupled,
                            sap_precision prec)
{
    char label[160];
    snprintf(label, sizeof label, "apply_many N=%lld K=%lld P=%lld %s %s%s%s", (long long)n, (long long)K, (long long)P,
             coupled ? "sap-c" : "sap-d", prec == SAP_FLOAT ? "float" : "double", mode ? " sweep=" : "",
             mode ? mode : "");
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, n, K, coupled ? 0.6 : 1.0, 0, (uint64_t)(7 * n + K + P), &A));
    if (!A) return;
    if (mode) setenv("SAP_BAND_SWEEP", mode, 1); /* read when the factors are prepared */
    sap_band_factor_opts fo = {.boost_threshold = -1, .boost_value = -1, .coupled = coupled};
    sap_band_fact *F = NULL;
    sap_int dropped = 0;
    double tbc = 0;
    sap_status st = sap__band_fact_create(ctx, A, P, 0, prec, &fo, 0, &F, &dropped, &tbc);
    unsetenv("SAP_BAND_SWEEP");
    CHECK_MSG(st >= 0 && F, "%s: create %s (%s)", label, sap_status_name(st), sap_context_last_error(ctx));
    if (st < 0 || !F) {
        sap_csr_destroy(A);
        return;
    }
    const sap_backend_ops *ops = F->ops;
    const sap_int kmax = 32;
    const size_t es = prec == SAP_FLOAT ? sizeof(float) : sizeof(double), cs = (size_t)n * es;
    const size_t tot = (size_t)kmax * (size_t)n;
    double *hr = malloc(sizeof(double) * tot);
    void *hb = malloc(es * tot), *h1 = malloc(es * tot), *hm = malloc(es * tot), *hi = malloc(es * tot);
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)(n * 31 + K);
    for (size_t i = 0; i < tot; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        hr[i] = (double)(x >> 11) * 0x1.0p-53 * 2.0 - 1.0;
        if (prec == SAP_FLOAT) ((float *)hb)[i] = (float)hr[i];
        else ((double *)hb)[i] = hr[i];
    }
    void *dr = NULL, *d1 = NULL, *dm = NULL, *di = NULL;
    CHECK_OK(ctx, ops->mem_alloc(ctx, es * tot, &dr));
    CHECK_OK(ctx, ops->mem_alloc(ctx, es * tot, &d1));
    CHECK_OK(ctx, ops->mem_alloc(ctx, es * tot, &dm));
    CHECK_OK(ctx, ops->mem_alloc(ctx, es * tot, &di));
    if (dr && d1 && dm && di) CHECK_OK(ctx, ops->mem_upload(ctx, dr, hb, es * tot));
    static const sap_int ks[] = {1, 2, 3, 7, 32};
    const double tol = prec == SAP_FLOAT ? 5e-5 : 1e-12;
    for (size_t t = 0; t < sizeof(ks) / sizeof(ks[0]) && dr && d1 && dm && di; t++) {
        const sap_int k = ks[t];
        sap_status s1 = SAP_OK, sm, si = SAP_OK;
        for (sap_int c = 0; c < k && s1 >= 0; c++)
            s1 = sap__band_fact_apply(F, (const char *)dr + (size_t)c * cs, (char *)d1 + (size_t)c * cs);
        sm = sap__band_fact_apply_many(F, k, dr, dm);
        if (!coupled) { /* in place: z = r */
            si = ops->mem_upload(ctx, di, hb, (size_t)k * cs);
            if (si >= 0) si = sap__band_fact_apply_many(F, k, di, di);
        }
        CHECK_MSG(s1 >= 0 && sm >= 0 && si >= 0, "%s k=%lld: apply %s many %s in place %s (%s)", label, (long long)k,
                  sap_status_name(s1), sap_status_name(sm), sap_status_name(si), sap_context_last_error(ctx));
        if (s1 < 0 || sm < 0 || si < 0) continue;
        CHECK_OK(ctx, ops->mem_download(ctx, h1, d1, (size_t)k * cs));
        CHECK_OK(ctx, ops->mem_download(ctx, hm, dm, (size_t)k * cs));
        if (!coupled) CHECK_OK(ctx, ops->mem_download(ctx, hi, di, (size_t)k * cs));
        double worst = 0, worst_i = 0;
        for (sap_int c = 0; c < k; c++) {
            double num = 0, numi = 0, den = 0;
            for (sap_int i = 0; i < n; i++) {
                const size_t e = (size_t)c * (size_t)n + (size_t)i;
                const double a = prec == SAP_FLOAT ? ((float *)h1)[e] : ((double *)h1)[e];
                const double b = prec == SAP_FLOAT ? ((float *)hm)[e] : ((double *)hm)[e];
                const double v = prec == SAP_FLOAT ? ((float *)hi)[e] : ((double *)hi)[e];
                num = fmax(num, fabs(a - b));
                if (!coupled) numi = fmax(numi, fabs(a - v));
                den = fmax(den, fabs(a));
            }
            worst = fmax(worst, den > 0 ? num / den : num);
            worst_i = fmax(worst_i, den > 0 ? numi / den : numi);
        }
        CHECK_MSG(worst <= tol, "%s k=%lld: apply_many differs from k applies by %.3g", label, (long long)k, worst);
        CHECK_MSG(worst_i <= tol, "%s k=%lld: in-place apply_many differs by %.3g", label, (long long)k, worst_i);
    }
    ops->mem_free(ctx, dr);
    ops->mem_free(ctx, d1);
    ops->mem_free(ctx, dm);
    ops->mem_free(ctx, di);
    free(hr);
    free(hb);
    free(h1);
    free(hm);
    free(hi);
    sap__band_fact_destroy(F);
    sap_csr_destroy(A);
}

/* P = 1, K = 1, uneven partitions (N not a multiple of P), narrow (warp) and wide
 * (block) bands; mode: SAP_BAND_SWEEP for the cuda sweeps (NULL: the default) */
static void apply_many_cases(sap_context *ctx, const char *mode)
{
    static const struct {
        sap_int n, K, P;
    } cases[] = {{400, 1, 1}, {1000, 1, 3}, {1001, 7, 7}, {2003, 33, 5}, {1500, 65, 1}, {3001, 100, 4}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int coupled = 0; coupled < 2; coupled++)
            for (int p = 0; p < 2; p++)
                apply_many_case(ctx, mode, cases[c].n, cases[c].K, cases[c].P, coupled, p ? SAP_DOUBLE : SAP_FLOAT);
}

/* k < 1 columns: SAP_ERR_INVALID from the apply and from the kernel table */
static void test_apply_many_invalid(sap_context *ctx)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 300, 3, 1.0, 0, 3, &A));
    if (!A) return;
    for (int coupled = 0; coupled < 2; coupled++) {
        sap_band_factor_opts fo = {.boost_threshold = -1, .boost_value = -1, .coupled = coupled};
        sap_band_fact *F = NULL;
        sap_int dropped = 0;
        double tbc = 0;
        CHECK_OK(ctx, sap__band_fact_create(ctx, A, 3, 0, SAP_DOUBLE, &fo, 0, &F, &dropped, &tbc));
        if (!F) continue;
        void *d = NULL;
        CHECK_OK(ctx, F->ops->mem_alloc(ctx, sizeof(double) * 300, &d));
        CHECK_STATUS(ctx, sap__band_fact_apply_many(F, 0, d, d), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, sap__band_fact_apply_many(F, -1, d, d), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, F->kt->block_solve(F, 0, d, d), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, F->kt->block_solve(F, -3, d, d), SAP_ERR_INVALID);
        F->ops->mem_free(ctx, d);
        sap__band_fact_destroy(F);
    }
    sap_csr_destroy(A);
}

static int cpu_part(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) return 1;
    test_bytes_bound(ctx);
    test_bad_input(ctx);
    test_band_arrays(ctx);
    test_boosting(ctx);
    test_varying_ki(ctx);
    test_precond_api(ctx);
    test_band_source(ctx);
    blocked_cases(ctx, NULL, sap_test_smoke());
    blocked_diagonal_case(ctx, NULL);
    singular_reduced_case(ctx, NULL);
    test_apply_many_invalid(ctx);
    apply_many_cases(ctx, NULL);
    test_grid(ctx);
    sap_context_destroy(ctx);
    test_oom();
    return 0;
}

/* ==== --backend cuda: a cuda context against a cpu reference context ================== */

static sap_context *G, *C;

/* The same with the factors filled on the backend from a BAND matrix (the band solver's
 * path): must equal pc_apply bit for bit on the same context. */
static sap_status pc_apply_src(sap_context *ctx, const sap_csr *A, const char *name, sap_int P, sap_precision prec,
                               const double *r, double *z)
{
    sap_matrix_options mo;
    sap_matrix_options_init(&mo);
    mo.format = SAP_FORMAT_BAND;
    sap_matrix *M = NULL;
    sap_precond *pc = NULL;
    sap_status st = sap_matrix_create(ctx, A, &mo, &M);
    sap_band_source src;
    memset(&src, 0, sizeof(src));
    const void *bv = NULL;
    if (st >= 0) st = sap__ops(ctx)->spmat_band(M->sm, &bv, &src.kl, &src.w);
    src.val = bv;
    if (st >= 0) st = sap_precond_create(ctx, name, &pc);
    sap_band_options o;
    sap_band_options_init(&o);
    o.partitions = P;
    if (st >= 0) st = sap_precond_set_band_options(pc, &o);
    if (st >= 0) st = sap__pc_sap_set_source(pc, &src);
    if (st >= 0) st = sap_precond_set_precision(pc, prec);
    if (st >= 0) st = sap_precond_setup_numeric(pc, A);
    if (st >= 0) {
        sap_status s2 = sap_precond_apply(pc, r, z);
        if (s2 < 0) st = s2;
    }
    sap_precond_destroy(pc);
    sap_matrix_destroy(M);
    return st;
}

static void compare_case(sap_int n, sap_int K, double d, sap_int P, int coupled, sap_precision prec)
{
    char label[128];
    snprintf(label, sizeof label, "N=%lld K=%lld d=%.2f P=%lld %s %s", (long long)n, (long long)K, d, (long long)P,
             coupled ? "sap-c" : "sap-d", prec == SAP_FLOAT ? "float" : "double");
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_banded(C, n, K, d, 0, (uint64_t)(n + K), &A));
    if (!A) return;
    double *r = malloc(sizeof(double) * n), *zc = malloc(sizeof(double) * n), *zg = malloc(sizeof(double) * n);
    double *b = malloc(sizeof(double) * n), *xs = malloc(sizeof(double) * n);
    double *xc = calloc(n, sizeof(double)), *xg = calloc(n, sizeof(double));
    for (sap_int i = 0; i < n; i++) r[i] = sin(0.37 * (double)i) + 0.5;
    const char *name = coupled ? "sap-c" : "sap-d";
    sap_band_stats sc, sg;
    memset(&sc, 0, sizeof sc);
    memset(&sg, 0, sizeof sg);
    sap_status s1 = pc_apply(C, A, name, P, prec, r, zc, &sc);
    sap_status s2 = pc_apply(G, A, name, P, prec, r, zg, &sg);
    CHECK_MSG(s1 >= 0 && s2 >= 0, "%s: cpu %s gpu %s (%s)", label, sap_status_name(s1), sap_status_name(s2),
              sap_context_last_error(G));
    if (s1 >= 0 && s2 >= 0) {
        double num = 0, den = 0;
        for (sap_int i = 0; i < n; i++) {
            num += (zc[i] - zg[i]) * (zc[i] - zg[i]);
            den += zc[i] * zc[i];
        }
        const double tol = prec == SAP_FLOAT ? 1e-3 : 1e-9;
        CHECK_MSG(sqrt(num / den) <= tol, "%s: preconditioner apply differs by %.3g", label, sqrt(num / den));
        CHECK_MSG(sc.boosted_pivots == sg.boosted_pivots, "%s: boosted %lld vs %lld", label,
                  (long long)sc.boosted_pivots, (long long)sg.boosted_pivots);
        CHECK(sc.partitions == sg.partitions);
        /* factors filled on the device from the BAND matrix: identical applies */
        double *zs = malloc(sizeof(double) * n);
        sap_status s3 = pc_apply_src(G, A, name, P, prec, r, zs);
        CHECK_MSG(s3 == s2, "%s: band-source setup %s vs %s (%s)", label, sap_status_name(s3), sap_status_name(s2),
                  sap_context_last_error(G));
        if (s3 >= 0)
            CHECK_MSG(memcmp(zs, zg, sizeof(double) * n) == 0, "%s: band-source factors differ from the CSR path", label);
        free(zs);
    }
    /* full solves */
    sap_gen_xstar(C, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A, 1.0, xs, 0.0, b);
    sap_band_options o;
    sap_band_options_init(&o);
    o.method = coupled ? SAP_BAND_SAPC : SAP_BAND_SAPD;
    o.partitions = P;
    o.factor_precision = prec;
    sap_band_solver *Sc = NULL, *Sg = NULL;
    CHECK_OK(C, sap_band_solver_create(C, A, &o, &Sc));
    CHECK_OK(G, sap_band_solver_create(G, A, &o, &Sg));
    sap_band_stats tc, tg;
    sap_status r1 = sap_band_solver_solve(Sc, b, xc, &tc);
    sap_status r2 = sap_band_solver_solve(Sg, b, xg, &tg);
    CHECK_MSG(r1 == SAP_OK && r2 == SAP_OK, "%s: solve cpu %s gpu %s (%s)", label, sap_status_name(r1),
              sap_status_name(r2), sap_context_last_error(G));
    const double rc = sap_test_rel_residual(A, xc, b), rg = sap_test_rel_residual(A, xg, b);
    CHECK_MSG(rc <= 1.0001e-10 && rg <= 1.0001e-10, "%s: residual cpu %.3g gpu %.3g", label, rc, rg);
    /* the backends round differently (SpMV summation order, float factors): on
     * ill-conditioned cases (d = 0.06: ~60 iterations) the Krylov paths drift apart, so
     * the iteration counts agree to 2 or 15%, whichever is larger */
    const double itol = fmax(2.0, 0.15 * tc.iterations);
    CHECK_MSG(fabs(tc.iterations - tg.iterations) <= itol, "%s: iterations cpu %.2f gpu %.2f", label, tc.iterations,
              tg.iterations);
    printf("%-44s it cpu %6.2f gpu %6.2f  gpu: T_BC %.4f T_LU %.4f T_SPK %.4f T_LUrdcd %.4f T_Kry %.4f\n", label,
           tc.iterations, tg.iterations, tg.time_bc, tg.time_lu, tg.time_spk, tg.time_lurdcd, tg.time_kry);
    sap_band_solver_destroy(Sc);
    sap_band_solver_destroy(Sg);
    free(r);
    free(zc);
    free(zg);
    free(b);
    free(xs);
    free(xc);
    free(xg);
    sap_csr_destroy(A);
}

/* The block-solve sweep kernels of the backend against the cpu reference apply, on random
 * bands over K (1 .. 600, N not a multiple of K), P (1 .. 64) and both precisions: the
 * default choice (chunked at these P, <= 4 per SM), every chunk width forced (SAP_BAND_SWEEP=chunkedBW:
 * a partition's unknowns in shared memory or, N = 20011 at P = 1 in double, in global
 * memory) and the per-step kernel (=step).  Each is compared with the cpu apply entry by
 * entry, and the default with the per-step kernel. */
static void sweep_case(sap_int n, sap_int K, sap_int P, int coupled, sap_precision prec)
{
    static const char *modes[] = {NULL, "step", "chunked32", "chunked16", "chunked8", "chunked4"};
    char label[128];
    snprintf(label, sizeof label, "sweeps N=%lld K=%lld P=%lld %s %s", (long long)n, (long long)K, (long long)P,
             coupled ? "sap-c" : "sap-d", prec == SAP_FLOAT ? "float" : "double");
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_banded(C, n, K, coupled ? 0.5 : 1.0, 0, (uint64_t)(3 * n + K), &A));
    if (!A) return;
    double *r = malloc(sizeof(double) * n), *zc = malloc(sizeof(double) * n), *zg = malloc(sizeof(double) * n),
           *zd = malloc(sizeof(double) * n);
    for (sap_int i = 0; i < n; i++) r[i] = cos(0.11 * (double)i) - 0.25;
    const char *name = coupled ? "sap-c" : "sap-d";
    sap_status s1 = pc_apply(C, A, name, P, prec, r, zc, NULL);
    CHECK_MSG(s1 >= 0, "%s: cpu %s", label, sap_status_name(s1));
    const double tol = prec == SAP_FLOAT ? 1e-3 : 1e-9;
    for (size_t v = 0; v < sizeof(modes) / sizeof(modes[0]) && s1 >= 0; v++) {
        if (modes[v]) setenv("SAP_BAND_SWEEP", modes[v], 1);
        else unsetenv("SAP_BAND_SWEEP");
        sap_status s2 = pc_apply(G, A, name, P, prec, r, zg, NULL);
        CHECK_MSG(s2 == s1, "%s [%s]: gpu %s, cpu %s (%s)", label, modes[v] ? modes[v] : "default",
                  sap_status_name(s2), sap_status_name(s1), sap_context_last_error(G));
        if (s2 < 0) continue;
        double num = 0, den = 0, nd = 0;
        for (sap_int i = 0; i < n; i++) {
            num += (zc[i] - zg[i]) * (zc[i] - zg[i]);
            den += zc[i] * zc[i];
        }
        if (v == 0) memcpy(zd, zg, sizeof(double) * n);
        else if (v == 1)
            for (sap_int i = 0; i < n; i++) nd += (zd[i] - zg[i]) * (zd[i] - zg[i]);
        CHECK_MSG(sqrt(num / den) <= tol, "%s [%s]: apply differs from the cpu by %.3g", label,
                  modes[v] ? modes[v] : "default", sqrt(num / den));
        if (v == 1) CHECK_MSG(sqrt(nd / den) <= tol, "%s: default and per-step sweeps differ by %.3g", label, sqrt(nd / den));
    }
    unsetenv("SAP_BAND_SWEEP");
    free(r);
    free(zc);
    free(zg);
    free(zd);
    sap_csr_destroy(A);
}

static void sweep_cases(int tiny)
{
    static const struct {
        sap_int n, K, P;
    } cases[] = {{1000, 1, 3},    {2003, 7, 64},   {3001, 31, 17},  {3001, 33, 1},   {4097, 100, 64},
                 {5003, 257, 7},  {7001, 600, 64}, {6007, 600, 1},  {20011, 150, 1}, {1501, 599, 2}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        if (tiny && cases[c].n * cases[c].K > 200000) continue;
        for (int p = 0; p < 2; p++)
            sweep_case(cases[c].n, cases[c].K, cases[c].P, (int)(c & 1), p ? SAP_DOUBLE : SAP_FLOAT);
    }
}

static void boosted_case(void)
{
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_banded(C, 3000, 5, 1.0, 0, 5, &A));
    if (!A) return;
    for (sap_int i = 0; i < A->nrows; i += 37)
        for (sap_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] == i) A->val[p] = 0;
    double *r = malloc(sizeof(double) * 3000), *zc = malloc(sizeof(double) * 3000), *zg = malloc(sizeof(double) * 3000);
    for (int i = 0; i < 3000; i++) r[i] = 1.0;
    sap_band_stats sc, sg;
    sap_status s1 = pc_apply(C, A, "sap-c", 4, SAP_DOUBLE, r, zc, &sc);
    sap_status s2 = pc_apply(G, A, "sap-c", 4, SAP_DOUBLE, r, zg, &sg);
    CHECK_STATUS(C, s1, SAP_WARN_BOOSTED_PIVOTS);
    CHECK_STATUS(G, s2, SAP_WARN_BOOSTED_PIVOTS);
    CHECK_MSG(sc.boosted_pivots == sg.boosted_pivots && sc.boosted_pivots > 0, "boosted %lld vs %lld",
              (long long)sc.boosted_pivots, (long long)sg.boosted_pivots);
    free(r);
    free(zc);
    free(zg);
    sap_csr_destroy(A);
}

static void timing_case(void)
{
    const sap_int n = 200000, K = 200;
    sap_csr *A = NULL;
    CHECK_OK(C, sap_gen_banded(C, n, K, 1.0, 0, 1, &A));
    if (!A) return;
    double *b = malloc(sizeof(double) * n), *xs = malloc(sizeof(double) * n), *x = calloc(n, sizeof(double));
    sap_gen_xstar(C, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A, 1.0, xs, 0.0, b);
    for (int m = 1; m <= 2; m++) {
        sap_band_options o;
        sap_band_options_init(&o);
        o.method = (sap_band_method)m;
        o.partitions = 0;
        sap_band_solver *S = NULL;
        CHECK_OK(G, sap_band_solver_create(G, A, &o, &S));
        sap_band_stats st;
        memset(x, 0, sizeof(double) * n);
        sap_status s = sap_band_solver_solve(S, b, x, &st);
        CHECK_MSG(s == SAP_OK, "timing %s: %s", sap_band_method_name(o.method), sap_status_name(s));
        CHECK(sap_test_rel_residual(A, x, b) <= 1.0001e-10);
        printf("N=200000 K=200 d=1 %s: P=%lld it=%.2f setup %.4f (BC %.4f LU %.4f SPK %.4f rdcd %.4f) Kry %.4f "
               "total %.4f s [%s]\n",
               sap_band_method_name(st.method), (long long)st.partitions, st.iterations, st.time_setup, st.time_bc,
               st.time_lu, st.time_spk, st.time_lurdcd, st.time_kry, st.time_setup + st.time_kry, st.reason);
        sap_band_solver_destroy(S);
    }
    free(b);
    free(xs);
    free(x);
    sap_csr_destroy(A);
}

static int gpu_part(void)
{
    int dryrun = 0;
    int rc = sap_test_gpu_context(sap_test_name(), 1, &G, &dryrun);
    if (rc) return rc;
    C = sap_test_context(SAP_BACKEND_CPU);
    static const struct {
        sap_int n, K;
        double d;
        sap_int P;
    } cases[] = {{2000, 1, 1.0, 7},   {3001, 5, 1.2, 50}, {5000, 31, 0.3, 7},   {6000, 32, 1.0, 2},
                 {8000, 63, 1.0, 50}, {8000, 64, 0.3, 7}, {8000, 65, 1.0, 2},   {20000, 200, 1.0, 50},
                 {40013, 200, 0.06, 50}};
    test_bytes_bound(G); /* the estimate against the device blocks' peak */
    const int smoke = sap_test_smoke(); /* every kernel variant, the small sizes only */
    if (sap_test_tiny()) {
        /* racecheck: every band kernel (fill, factor, spikes, reduced factor and solve,
         * purify, block solve in its warp (K <= 32) and block (K > 32) forms, partitions
         * in shared memory and, N = 6400 double at P = 1, too tall for it) in float and
         * double, SaP-D and SaP-C, at tiny sizes */
        static const struct {
            sap_int n, K;
            double d;
            sap_int P;
        } tiny[] = {{200, 1, 1.0, 3}, {300, 5, 1.2, 4}, {400, 31, 0.3, 3}, {600, 33, 1.0, 2}, {300, 65, 1.0, 2}};
        for (size_t c = 0; c < sizeof(tiny) / sizeof(tiny[0]); c++)
            for (int coupled = 0; coupled < 2; coupled++)
                for (int p = 0; p < 2; p++)
                    compare_case(tiny[c].n, tiny[c].K, tiny[c].d, tiny[c].P, coupled, p ? SAP_DOUBLE : SAP_FLOAT);
        compare_case(6400, 1, 1.0, 1, 0, SAP_DOUBLE);
        sweep_cases(1);
        blocked_cases(G, C, 1);
        apply_many_cases(G, "step");
        apply_many_cases(G, "chunked");
        boosted_case();
        sap_context_destroy(C);
        sap_context_destroy(G);
        return 0;
    }
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int coupled = 0; coupled < 2; coupled++)
            for (int p = 0; p < 2; p++) {
                if (cases[c].d < 0.1 && p == 0) continue; /* d = 0.06: double factors */
                if (smoke && (cases[c].n > 8000 || p == 1)) continue; /* warp and block paths, float */
                compare_case(cases[c].n, cases[c].K, cases[c].d, cases[c].P, coupled, p ? SAP_DOUBLE : SAP_FLOAT);
            }
    if (!smoke) sweep_cases(0);
    blocked_cases(G, C, smoke);
    blocked_diagonal_case(G, C);
    singular_reduced_case(G, C);
    /* the many-column sweeps: the default choice, the per-step kernels, every chunk width */
    test_apply_many_invalid(G);
    apply_many_cases(G, NULL);
    apply_many_cases(G, "step");
    if (!smoke) {
        apply_many_cases(G, "chunked32");
        apply_many_cases(G, "chunked16");
        apply_many_cases(G, "chunked8");
        apply_many_cases(G, "chunked4");
    }
    boosted_case();
    if (!dryrun && !smoke) timing_case();
    sap_context_destroy(C);
    sap_context_destroy(G);
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_band", cpu_part, gpu_part); }
