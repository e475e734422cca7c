/* test_btd.c -- the block-tridiagonal solvers (sap_btd_*), per backend (sap_test_main):
 * every algorithm and BCYCLIC variant against a dense LU solve (LAPACKE dgesv, or the
 * partial-pivoting elimination written here when LAPACKE is missing) on random systems
 * over k = 1..96 and nb = 1..200 (powers of two and not), diagonally dominant and not,
 * several right-hand sides; singular-block detection; refactorization; CSR input with
 * the block width detected; invalid input; the same bits for 1 and 2 threads.  GPU part:
 * the cuda context against the cpu one. */
#define _POSIX_C_SOURCE 200809L /* setenv, strdup */
#include "testing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef SAP_HAVE_LAPACKE
#include <lapacke.h>
#endif

#define SAP_TEST_HAS_GPU_PART 1

typedef struct sys {
    int k, nb, n;
    double *lo, *di, *up; /* nb k^2 each */
} sys;

static double urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* dominant: row sums of the off-diagonal parts below the diagonal entry (d = 2);
 * otherwise diagonal blocks random plus 1.5 sqrt(3k) I (well conditioned, not dominant). */
static sys make_sys(int k, int nb, int dominant, uint64_t seed)
{
    sys S = {k, nb, k * nb, NULL, NULL, NULL};
    size_t m = (size_t)nb * k * k;
    S.lo = calloc(m, 8), S.di = calloc(m, 8), S.up = calloc(m, 8);
    uint64_t s = seed * 2654435761u + 17;
    for (size_t i = 0; i < m; i++) S.lo[i] = urand(&s), S.up[i] = urand(&s), S.di[i] = urand(&s);
    for (int b = 0; b < nb; b++)
        for (int i = 0; i < k; i++) {
            double off = 0;
            for (int j = 0; j < k; j++) {
                if (b > 0) off += fabs(S.lo[(size_t)b * k * k + i + j * k]);
                if (b < nb - 1) off += fabs(S.up[(size_t)b * k * k + i + j * k]);
                if (j != i) off += fabs(S.di[(size_t)b * k * k + i + j * k]);
            }
            double *d = &S.di[(size_t)b * k * k + i + i * k];
            if (dominant) *d = (*d >= 0 ? 1 : -1) * 2.0 * (off + 1e-3);
            else *d += 1.5 * sqrt(3.0 * k) * (i % 2 ? -1 : 1);
        }
    return S;
}

static void free_sys(sys *S) { free(S->lo), free(S->di), free(S->up); }

static double *dense_of(const sys *S)
{
    int n = S->n, k = S->k;
    double *M = calloc((size_t)n * n, 8);
    for (int b = 0; b < S->nb; b++)
        for (int j = 0; j < k; j++)
            for (int i = 0; i < k; i++) {
                size_t e = (size_t)b * k * k + i + (size_t)j * k;
                int r = b * k + i;
                M[r + (size_t)(b * k + j) * n] = S->di[e];
                if (b > 0) M[r + (size_t)((b - 1) * k + j) * n] = S->lo[e];
                if (b < S->nb - 1) M[r + (size_t)((b + 1) * k + j) * n] = S->up[e];
            }
    return M;
}

/* X := M^{-1} X (n x nrhs) */
static int dense_solve(int n, int nrhs, double *M, double *X)
{
#ifdef SAP_HAVE_LAPACKE
    lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
    lapack_int info = LAPACKE_dgesv(LAPACK_COL_MAJOR, n, nrhs, M, n, ipiv, X, n);
    free(ipiv);
    return (int)info;
#else
    for (int j = 0; j < n; j++) {
        int p = j;
        for (int i = j + 1; i < n; i++)
            if (fabs(M[i + (size_t)j * n]) > fabs(M[p + (size_t)j * n])) p = i;
        if (M[p + (size_t)j * n] == 0) return j + 1;
        for (int c = 0; c < n; c++) {
            double t = M[j + (size_t)c * n];
            M[j + (size_t)c * n] = M[p + (size_t)c * n], M[p + (size_t)c * n] = t;
        }
        for (int c = 0; c < nrhs; c++) {
            double t = X[j + (size_t)c * n];
            X[j + (size_t)c * n] = X[p + (size_t)c * n], X[p + (size_t)c * n] = t;
        }
        for (int i = j + 1; i < n; i++) {
            double f = M[i + (size_t)j * n] / M[j + (size_t)j * n];
            if (f == 0) continue;
            for (int c = j; c < n; c++) M[i + (size_t)c * n] -= f * M[j + (size_t)c * n];
            for (int c = 0; c < nrhs; c++) X[i + (size_t)c * n] -= f * X[j + (size_t)c * n];
        }
    }
    for (int c = 0; c < nrhs; c++)
        for (int j = n - 1; j >= 0; j--) {
            double *x = X + (size_t)c * n;
            x[j] /= M[j + (size_t)j * n];
            for (int i = 0; i < j; i++) x[i] -= M[i + (size_t)j * n] * x[j];
        }
    return 0;
#endif
}

static double rel_err(int n, int nrhs, const double *x, const double *ref)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < (size_t)n * nrhs; i++) num += (x[i] - ref[i]) * (x[i] - ref[i]), den += ref[i] * ref[i];
    return sqrt(num / (den > 0 ? den : 1));
}

typedef struct cfg {
    sap_btd_algo algo;
    sap_btd_variant variant;
    int partitions, inexact;
} cfg;

/* solves S with one configuration on ctx; returns the relative error against ref (the
 * dense solution), -1 on a failed status */
static double run_cfg(sap_context *ctx, const sys *S, const cfg *c, int nrhs, const double *B, const double *ref,
                      double *X)
{
    sap_btd_options o;
    sap_btd_options_init(&o);
    o.algo = c->algo, o.variant = c->variant, o.partitions = c->partitions, o.inexact = c->inexact;
    sap_btd *T = NULL;
    sap_status st = sap_btd_create(ctx, S->k, S->nb, S->lo, S->di, S->up, &o, &T);
    if (st != SAP_OK) return -1;
    st = sap_btd_solve_many(T, nrhs, B, S->n, X, S->n);
    sap_btd_destroy(T);
    if (st != SAP_OK) {
        fprintf(stderr, "  %s: %s\n", sap_status_name(st), sap_context_last_error(ctx));
        return -1;
    }
    return rel_err(S->n, nrhs, X, ref);
}

static void test_algorithms(sap_context *ctx)
{
    static const int cases[][2] = {{1, 1},  {1, 2},  {1, 7},  {3, 1},   {2, 3},  {5, 2},  {4, 8},  {8, 13},
                                   {6, 16}, {16, 31}, {1, 200}, {3, 200}, {7, 100}, {32, 17}, {96, 5}, {64, 6}};
    static const cfg cfgs[] = {
        {SAP_BTD_AUTO, SAP_BTD_VARIANT_AUTO, 0, 0},       {SAP_BTD_BCYCLIC, SAP_BTD_GETRS_BATCHED, 0, 0},
        {SAP_BTD_BCYCLIC, SAP_BTD_GETRS, 0, 0},           {SAP_BTD_BCYCLIC, SAP_BTD_GETRI_BATCHED, 0, 0},
        {SAP_BTD_BCYCLIC, SAP_BTD_GETRI, 0, 0},           {SAP_BTD_SPIKE, SAP_BTD_GETRS_BATCHED, 2, 0},
        {SAP_BTD_SPIKE, SAP_BTD_GETRI_BATCHED, 3, 0},     {SAP_BTD_SPIKE, SAP_BTD_VARIANT_AUTO, 0, 0},
        {SAP_BTD_REDUCED_SPIKE, SAP_BTD_GETRS_BATCHED, 3, 1}, {SAP_BTD_REDUCED_SPIKE, SAP_BTD_GETRS, 0, 1},
    };
    int ncases = sap_test_smoke() ? 6 : (int)(sizeof cases / sizeof *cases);
    for (int ci = 0; ci < ncases; ci++)
        for (int dom = 0; dom <= 1; dom++) {
            int k = cases[ci][0], nb = cases[ci][1], n = k * nb, nrhs = 1 + (ci + dom) % 3;
            sys S = make_sys(k, nb, dom, (uint64_t)(ci * 2 + dom + 1));
            double *B = malloc((size_t)n * nrhs * 8), *ref = malloc((size_t)n * nrhs * 8);
            double *X = malloc((size_t)n * nrhs * 8), *M = dense_of(&S);
            uint64_t s = 99 + ci;
            for (size_t i = 0; i < (size_t)n * nrhs; i++) B[i] = ref[i] = urand(&s);
            CHECK(dense_solve(n, nrhs, M, ref) == 0);
            for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; c++) {
                if (cfgs[c].inexact && !dom) continue; /* truncated Spike needs decaying spikes */
                double e = run_cfg(ctx, &S, &cfgs[c], nrhs, B, ref, X);
                double tol = dom ? 1e-10 : 1e-7;
                CHECK_MSG(e >= 0 && e <= tol, "k %d nb %d dom %d nrhs %d algo %s variant %s P %d: error %.3g", k, nb,
                          dom, nrhs, sap_btd_algo_name(cfgs[c].algo), sap_btd_variant_name(cfgs[c].variant),
                          cfgs[c].partitions, e);
            }
            /* reduced Spike as a direct solver: exact when P = 1, close for a dominant T */
            cfg rs = {SAP_BTD_REDUCED_SPIKE, SAP_BTD_GETRS_BATCHED, 2, 0};
            if (dom && nb >= 4) {
                double e = run_cfg(ctx, &S, &rs, nrhs, B, ref, X);
                CHECK_MSG(e >= 0 && e < 0.5, "reduced spike direct k %d nb %d: error %.3g", k, nb, e);
            }
            free(B), free(ref), free(X), free(M);
            free_sys(&S);
        }
}

static void test_singular_and_refactor(sap_context *ctx)
{
    int k = 4, nb = 9, n = k * nb;
    sys S = make_sys(k, nb, 1, 7);
    double *save = malloc((size_t)k * k * 8), *b = malloc((size_t)n * 8), *x = malloc((size_t)n * 8);
    memcpy(save, S.di + 3 * k * k, (size_t)k * k * 8);
    memset(S.di + 3 * k * k, 0, (size_t)k * k * 8);
    memset(S.lo + 3 * k * k, 0, (size_t)k * k * 8);
    memset(S.up + 3 * k * k, 0, (size_t)k * k * 8);
    for (int i = 0; i < n; i++) b[i] = 1.0 + i % 3;
    sap_btd_options o;
    sap_btd_options_init(&o);
    /* every variant finds the singular block: one met on the first level (row 3) and, with
     * row 0's diagonal and upper blocks zeroed as well, still row 3 (the first level comes
     * first); row 0 alone is met last (the row left by the reduction) */
    for (int v = SAP_BTD_GETRS_BATCHED; v <= SAP_BTD_GETRI; v++)
        for (int rep = 0; rep < 3; rep++) {
            sys R = make_sys(k, nb, 1, 7);
            if (rep < 2) {
                memset(R.di + 3 * k * k, 0, (size_t)k * k * 8);
                memset(R.lo + 3 * k * k, 0, (size_t)k * k * 8);
                memset(R.up + 3 * k * k, 0, (size_t)k * k * 8);
            }
            if (rep > 0) memset(R.di, 0, (size_t)k * k * 8), memset(R.up, 0, (size_t)k * k * 8);
            o.variant = (sap_btd_variant)v;
            sap_btd *T = NULL;
            CHECK_OK(ctx, sap_btd_create(ctx, k, nb, R.lo, R.di, R.up, &o, &T));
            CHECK_STATUS(ctx, sap_btd_factor(T), SAP_ERR_SINGULAR);
            sap_btd_stats st;
            CHECK_OK(ctx, sap_btd_get_stats(T, &st));
            CHECK_MSG(st.singular_block == (rep < 2 ? 3 : 0), "variant %d case %d: singular block %lld", v, rep,
                      (long long)st.singular_block);
            sap_btd_destroy(T);
            free_sys(&R);
        }
    o.variant = SAP_BTD_GETRS_BATCHED;
    sap_btd *T = NULL;
    CHECK_OK(ctx, sap_btd_create(ctx, k, nb, S.lo, S.di, S.up, &o, &T));
    CHECK_STATUS(ctx, sap_btd_factor(T), SAP_ERR_SINGULAR);
    sap_btd_stats st;
    CHECK_OK(ctx, sap_btd_get_stats(T, &st));
    CHECK_MSG(st.singular_block == 3, "singular block %lld, expected 3", (long long)st.singular_block);
    CHECK(strstr(sap_context_last_error(ctx), "block row 3") != NULL);
    CHECK_STATUS(ctx, sap_btd_solve(T, b, x), SAP_ERR_SINGULAR);
    /* refactor with good values, then again with other values */
    memcpy(S.di + 3 * k * k, save, (size_t)k * k * 8);
    for (int rep = 0; rep < 2; rep++) {
        if (rep == 1)
            for (int i = 0; i < nb * k * k; i++) S.di[i] *= 1.5, S.lo[i] *= -1.0;
        CHECK_OK(ctx, sap_btd_refactor(T, S.lo, S.di, S.up));
        CHECK_OK(ctx, sap_btd_solve(T, b, x));
        double *M = dense_of(&S), *ref = malloc((size_t)n * 8);
        memcpy(ref, b, (size_t)n * 8);
        CHECK(dense_solve(n, 1, M, ref) == 0);
        CHECK_MSG(rel_err(n, 1, x, ref) < 1e-11, "refactor %d: error %.3g", rep, rel_err(n, 1, x, ref));
        /* T x = b through the matvec */
        double *y = malloc((size_t)n * 8);
        CHECK_OK(ctx, sap_btd_matvec(T, x, y));
        CHECK(rel_err(n, 1, y, b) < 1e-11);
        free(M), free(ref), free(y);
    }
    CHECK_OK(ctx, sap_btd_get_stats(T, &st));
    CHECK(st.solves == 1 && st.singular_block == -1 && st.algo == SAP_BTD_BCYCLIC);
    sap_btd_destroy(T);
    free(save), free(b), free(x);
    free_sys(&S);
}

static void test_csr_and_errors(sap_context *ctx)
{
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_gen_blocktridiag(ctx, 10, 8, 1.5, 3, &A));
    sap_int k = 0;
    CHECK_OK(ctx, sap_btd_detect_block(A, &k));
    CHECK_MSG(k == 8, "detected k %lld", (long long)k);
    sap_btd *T = NULL;
    CHECK_OK(ctx, sap_btd_create_csr(ctx, A, 0, NULL, &T));
    int n = (int)A->nrows;
    double *b = malloc((size_t)n * 8), *x = malloc((size_t)n * 8);
    for (int i = 0; i < n; i++) b[i] = sin(i);
    CHECK_OK(ctx, sap_btd_solve(T, b, x));
    CHECK_MSG(sap_test_rel_residual(A, x, b) < 1e-12, "csr residual %.3g", sap_test_rel_residual(A, x, b));
    CHECK(sap_btd_block_size(T) == 8 && sap_btd_block_rows(T) == 10);
    /* refactor from a CSR with new values */
    for (sap_int p = 0; p < A->nnz; p++)
        if (A->colind[p] == 0) A->val[p] *= 2;
    CHECK_OK(ctx, sap_btd_refactor_csr(T, A));
    CHECK_OK(ctx, sap_btd_solve(T, b, x));
    CHECK(sap_test_rel_residual(A, x, b) < 1e-12);
    /* x may alias b */
    memcpy(x, b, (size_t)n * 8);
    CHECK_OK(ctx, sap_btd_solve(T, x, x));
    CHECK(sap_test_rel_residual(A, x, b) < 1e-12);
    b[5] = NAN;
    CHECK_STATUS(ctx, sap_btd_solve(T, b, x), SAP_ERR_NONFINITE);
    sap_btd_destroy(T);
    T = NULL;
    /* k = 4 does not fit (the blocks of 8 span three blocks of 4); k = 3 does not divide */
    CHECK_STATUS(ctx, sap_btd_create_csr(ctx, A, 4, NULL, &T), SAP_ERR_INVALID);
    CHECK(T == NULL);
    CHECK_STATUS(ctx, sap_btd_create_csr(ctx, A, 3, NULL, &T), SAP_ERR_INVALID);
    CHECK_STATUS(ctx, sap_btd_create(ctx, 0, 3, b, b, b, NULL, &T), SAP_ERR_INVALID);
    double blk[4] = {1, NAN, 0, 1};
    CHECK_STATUS(ctx, sap_btd_create(ctx, 2, 1, NULL, blk, NULL, NULL, &T), SAP_ERR_NONFINITE);
    sap_btd_options o;
    sap_btd_options_init(&o);
    o.partitions = -1;
    blk[1] = 0;
    CHECK_STATUS(ctx, sap_btd_create(ctx, 2, 1, NULL, blk, NULL, &o, &T), SAP_ERR_INVALID);
    sap_btd_options_init(&o);
    CHECK(o.solves == 16);
    o.solves = -1;
    CHECK_STATUS(ctx, sap_btd_create(ctx, 2, 1, NULL, blk, NULL, &o, &T), SAP_ERR_INVALID);
    /* the automatic variant for a factorization alone (no solves) and for 16 solves */
    for (int ns = 0; ns <= 16; ns += 16) {
        sap_csr *G = NULL;
        CHECK_OK(ctx, sap_gen_blocktridiag(ctx, 6, 5, 1.5, 3, &G));
        sap_btd_options_init(&o);
        o.solves = ns;
        T = NULL;
        CHECK_OK(ctx, sap_btd_create_csr(ctx, G, 5, &o, &T));
        CHECK_OK(ctx, sap_btd_factor(T));
        sap_btd_stats st;
        CHECK_OK(ctx, sap_btd_get_stats(T, &st));
        CHECK(st.variant >= SAP_BTD_GETRS_BATCHED && st.variant <= SAP_BTD_GETRI);
        double *gb = malloc((size_t)G->nrows * 8), *gx = malloc((size_t)G->nrows * 8);
        for (sap_int i = 0; i < G->nrows; i++) gb[i] = cos((double)i);
        CHECK_OK(ctx, sap_btd_solve(T, gb, gx));
        CHECK(sap_test_rel_residual(G, gx, gb) < 1e-12);
        free(gb), free(gx);
        sap_btd_destroy(T);
        sap_csr_destroy(G);
    }
    sap_btd_algo a;
    sap_btd_variant v;
    CHECK(sap_btd_algo_parse("reduced-spike", &a) == SAP_OK && a == SAP_BTD_REDUCED_SPIKE);
    CHECK(sap_btd_algo_parse("nope", &a) == SAP_ERR_INVALID);
    CHECK(sap_btd_variant_parse("getri-batched", &v) == SAP_OK && v == SAP_BTD_GETRI_BATCHED);
    sap_btd_destroy(NULL);
    free(b), free(x);
    sap_csr_destroy(A);
}

/* the same bits for 1 and 2 threads */
static void test_determinism(sap_context *ctx)
{
    sys S = make_sys(12, 37, 1, 5);
    int n = S.n, nrhs = 3;
    double *B = malloc((size_t)n * nrhs * 8), *X1 = malloc((size_t)n * nrhs * 8), *X2 = malloc((size_t)n * nrhs * 8);
    for (int i = 0; i < n * nrhs; i++) B[i] = cos(i);
    for (int algo = SAP_BTD_BCYCLIC; algo <= SAP_BTD_SPIKE; algo++) {
        sap_btd_options o;
        sap_btd_options_init(&o);
        o.algo = (sap_btd_algo)algo, o.variant = SAP_BTD_GETRI_BATCHED;
        double *X[2] = {X1, X2};
        for (int t = 0; t < 2; t++) {
            sap_context_set_threads(ctx, t + 1);
            sap_btd *T = NULL;
            CHECK_OK(ctx, sap_btd_create(ctx, S.k, S.nb, S.lo, S.di, S.up, &o, &T));
            CHECK_OK(ctx, sap_btd_solve_many(T, nrhs, B, n, X[t], n));
            sap_btd_destroy(T);
        }
        CHECK(memcmp(X1, X2, (size_t)n * nrhs * 8) == 0);
    }
    sap_context_set_threads(ctx, 0);
    free(B), free(X1), free(X2);
    free_sys(&S);
}

/* one distributed BCYCLIC object of rows first .. first + cnt - 1 of S in the order
 * $SAP_BTD_DIST = dist (restored after creation) */
static sap_status create_mode(sap_context *ctx, const sys *S, int first, int cnt, const char *dist, sap_btd_variant v,
                              sap_btd **T)
{
    const char *old = getenv("SAP_BTD_DIST");
    char *keep = old ? strdup(old) : NULL;
    setenv("SAP_BTD_DIST", dist, 1);
    sap_btd_options o;
    sap_btd_options_init(&o);
    o.algo = SAP_BTD_BCYCLIC;
    o.variant = v;
    size_t kk = (size_t)S->k * S->k;
    sap_status st = sap_btd_create_dist(ctx, NULL, S->k, cnt, S->lo + first * kk, S->di + first * kk,
                                        S->up + first * kk, &o, T);
    if (keep) setenv("SAP_BTD_DIST", keep, 1);
    else unsetenv("SAP_BTD_DIST");
    free(keep);
    return st;
}

/* solve nrhs random right-hand sides with T (rows first .. of S, cnt of them) and compare
 * with the dense solve: the relative error (every process) */
static double dist_error(sap_context *ctx, sap_btd *T, const sys *S, int first, int cnt, int nrhs, uint64_t seed)
{
    int n = S->n, k = S->k;
    double *B = malloc((size_t)n * nrhs * 8), *ref = malloc((size_t)n * nrhs * 8), *M = dense_of(S);
    double *X = malloc((size_t)n * nrhs * 8), *BL = malloc((size_t)cnt * k * nrhs * 8), *XL = malloc((size_t)cnt * k * nrhs * 8);
    for (size_t i = 0; i < (size_t)n * nrhs; i++) B[i] = ref[i] = urand(&seed);
    CHECK(dense_solve(n, nrhs, M, ref) == 0);
    int nl = cnt * k;
    for (int c = 0; c < nrhs; c++) memcpy(BL + (size_t)c * nl, B + (size_t)c * n + (size_t)first * k, (size_t)nl * 8);
    double e = INFINITY;
    sap_status st = sap_btd_solve_many(T, nrhs, BL, nl, XL, nl);
    CHECK_OK(ctx, st);
    if (st == SAP_OK) {
        for (int c = 0; c < nrhs; c++) CHECK_OK(ctx, sap_btd_gather(T, XL + (size_t)c * nl, X + (size_t)c * n));
        e = rel_err(n, nrhs, X, ref);
    }
    free(B), free(ref), free(M), free(X), free(BL), free(XL);
    return e;
}

/* The distributed BCYCLIC in both orders ($SAP_BTD_DIST levels / interior, its reduced system
 * distributed or replicated) on uneven
 * partitions (1 block row on a process included) against the dense solve: every variant,
 * several right-hand sides, refactor; a singular block inside a process and on an
 * interface row named by every process, the object usable after; a bad $SAP_BTD_DIST. */
static void test_dist_orders(sap_context *ctx, int p, int rank)
{
    static const int counts[][5] = {{1, 1, 1, 1, 1}, {3, 1, 2, 5, 1}, {2, 7, 1, 4, 3}, {9, 2, 6, 1, 5},
                                    {17, 3, 1, 8, 2}, {4, 4, 4, 4, 4}, {12, 5, 33, 2, 6}};
    static const int ks[] = {1, 3, 5, 8, 2, 16, 4};
    /* interior: the reduced system as the library chooses (replicated on the cpu backend and
     * with a device-to-device transport); -dist / -repl force it distributed / replicated */
    static const char *modes[] = {"levels", "interior", "interior-dist", "interior-repl"};
    const int nmodes = (int)(sizeof modes / sizeof *modes);
    /* on a GPU each object opens its NCCL communicator (~0.7 s): three cases there */
    const int gpu = sap_context_backend(ctx) != SAP_BACKEND_CPU;
    for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
        if (gpu && ci != 0 && ci != 2 && ci != 6) continue;
        int k = ks[ci], dom = ci != 3, nrhs = 1 + (int)ci % 3, nb = 0, first = 0, cnt = counts[ci][rank % 5];
        for (int r = 0; r < p; r++) {
            if (r < rank) first += counts[ci][r % 5];
            nb += counts[ci][r % 5];
        }
        sys S = make_sys(k, nb, dom, 100 + ci), R = make_sys(k, nb, dom, 200 + ci);
        size_t kk = (size_t)k * k;
        for (int mi = 0; mi < nmodes; mi++) {
            sap_btd_variant v = (sap_btd_variant)(1 + (ci + (size_t)mi) % 4);
            sap_btd *T = NULL;
            sap_status cs = create_mode(ctx, &S, first, cnt, modes[mi], v, &T);
            CHECK_OK(ctx, cs);
            if (cs != SAP_OK) continue;
            double tol = dom ? 1e-10 : 1e-7;
            double e = dist_error(ctx, T, &S, first, cnt, nrhs, 7 + ci);
            CHECK_MSG(e <= tol, "rank %d of %d: %s k %d nb %d (case %zu) %s: error %.3g", rank, p, modes[mi], k, nb, ci,
                      sap_btd_variant_name(v), e);
            CHECK_OK(ctx, sap_btd_refactor(T, R.lo + first * kk, R.di + first * kk, R.up + first * kk));
            e = dist_error(ctx, T, &R, first, cnt, 2, 9 + ci);
            CHECK_MSG(e <= tol, "rank %d of %d: %s refactor k %d nb %d: error %.3g", rank, p, modes[mi], k, nb, e);
            sap_btd_destroy(T);
        }
        /* singular: an all-zero block row inside the last process (when it has one) or its first row */
        int last0 = nb - counts[ci][(p - 1) % 5], lcnt = counts[ci][(p - 1) % 5];
        int bad[2] = {lcnt >= 3 ? last0 + 1 : -1, last0};
        for (int bi = 0; bi < 2 && (!gpu || ci == 2); bi++) {
            if (bad[bi] < 0) continue;
            sys Z = make_sys(k, nb, 1, 300 + ci);
            memset(Z.di + (size_t)bad[bi] * kk, 0, kk * 8);
            memset(Z.lo + (size_t)bad[bi] * kk, 0, kk * 8);
            memset(Z.up + (size_t)bad[bi] * kk, 0, kk * 8);
            sys G = make_sys(k, nb, 1, 400 + ci);
            for (int mi = 0; mi < nmodes; mi++) {
                sap_btd *T = NULL;
                sap_status cs = create_mode(ctx, &Z, first, cnt, modes[mi], SAP_BTD_GETRS_BATCHED, &T);
                CHECK_OK(ctx, cs);
                if (cs != SAP_OK) continue;
                CHECK_STATUS(ctx, sap_btd_factor(T), SAP_ERR_SINGULAR);
                sap_btd_stats st;
                sap_btd_get_stats(T, &st);
                CHECK_MSG(st.singular_block == bad[bi], "rank %d %s: singular block %lld, expected %d", rank,
                          modes[mi], (long long)st.singular_block, bad[bi]);
                CHECK_OK(ctx, sap_btd_refactor(T, G.lo + first * kk, G.di + first * kk, G.up + first * kk));
                double e = dist_error(ctx, T, &G, first, cnt, 1, 11);
                CHECK_MSG(e <= 1e-10, "rank %d %s: after a singular factor: error %.3g", rank, modes[mi], e);
                sap_btd_destroy(T);
            }
            free_sys(&Z), free_sys(&G);
        }
        free_sys(&S), free_sys(&R);
    }
    /* a bad order: every process fails creation */
    sys S = make_sys(2, 2 * p, 1, 5);
    sap_btd *T = NULL;
    CHECK_STATUS(ctx, create_mode(ctx, &S, 2 * rank, 2, "bogus", SAP_BTD_GETRS, &T), SAP_ERR_INVALID);
    CHECK(T == NULL);
    free_sys(&S);
}

/* Under mpiexec (SAP_TEST_MPI=1): every algorithm distributed over the processes against
 * the dense solve, singular blocks found on any process, the unsupported combinations. */
static void test_distributed(sap_context *ctx)
{
    int p = sap_mpi_init(NULL, NULL), rank = sap_mpi_rank();
    static const int cases[][3] = {{1, 8, 1}, {3, 7, 1}, {5, 13, 0}, {8, 40, 1}, {16, 9, 0}, {2, 200, 1},
                                   {48, 11, 1}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        int k = cases[ci][0], nb = cases[ci][1], dom = cases[ci][2], n = k * nb, nrhs = 1 + (int)ci % 3;
        if (nb < 2 * p) continue;
        sys S = make_sys(k, nb, dom, ci + 11);
        double *B = malloc((size_t)n * nrhs * 8), *ref = malloc((size_t)n * nrhs * 8), *M = dense_of(&S);
        uint64_t sd = 5 + ci;
        for (size_t i = 0; i < (size_t)n * nrhs; i++) B[i] = ref[i] = urand(&sd);
        CHECK(dense_solve(n, nrhs, M, ref) == 0);
        int q = nb / p, rem = nb % p, first = rank * q + (rank < rem ? rank : rem), cnt = q + (rank < rem);
        size_t kk = (size_t)k * k;
        for (int algo = SAP_BTD_AUTO; algo <= SAP_BTD_REDUCED_SPIKE; algo++) {
            if (algo == SAP_BTD_REDUCED_SPIKE && !dom) continue;
            sap_btd_options o;
            sap_btd_options_init(&o);
            o.algo = (sap_btd_algo)algo;
            o.variant = ci % 2 ? SAP_BTD_GETRI_BATCHED : SAP_BTD_VARIANT_AUTO;
            if (algo == SAP_BTD_BCYCLIC) o.variant = (sap_btd_variant)(1 + ci % 4); /* each variant */
            sap_btd *T = NULL;
            CHECK_OK(ctx, sap_btd_create_dist(ctx, NULL, k, cnt, S.lo + first * kk, S.di + first * kk,
                                              S.up + first * kk, &o, &T));
            if (!T) continue;
            CHECK(sap_btd_processes(T) == p);
            sap_int r0, nl;
            CHECK_OK(ctx, sap_btd_dist_range(T, &r0, &nl));
            CHECK(r0 == (sap_int)first * k && nl == (sap_int)cnt * k);
            double *BL = malloc((size_t)nl * nrhs * 8), *XL = malloc((size_t)nl * nrhs * 8);
            double *X = malloc((size_t)n * nrhs * 8);
            for (int c = 0; c < nrhs; c++) memcpy(BL + (size_t)c * nl, B + (size_t)c * n + r0, (size_t)nl * 8);
            CHECK_OK(ctx, sap_btd_solve_many(T, nrhs, BL, nl, XL, nl));
            for (int c = 0; c < nrhs; c++) CHECK_OK(ctx, sap_btd_gather(T, XL + (size_t)c * nl, X + (size_t)c * n));
            /* the transport of the exchanges: $SAP_BTD_TRANSPORT is obeyed (BCYCLIC) */
            sap_btd_stats ts;
            CHECK_OK(ctx, sap_btd_get_stats(T, &ts));
            const char *want = getenv("SAP_BTD_TRANSPORT");
            int nccl = ts.transport && strncmp(ts.transport, "nccl", 4) == 0;
            if (rank == 0 && ci == 0 && algo == SAP_BTD_BCYCLIC)
                printf("%s: %d processes, BCYCLIC transport %s\n", sap_test_name(), p, ts.transport);
            if (p == 1) CHECK(ts.transport && strcmp(ts.transport, "none") == 0);
            else if (algo == SAP_BTD_BCYCLIC && want && strcmp(want, "nccl") == 0) CHECK_MSG(nccl, "%s", ts.transport);
            else if (algo != SAP_BTD_BCYCLIC || sap_context_backend(ctx) == SAP_BACKEND_CPU || (want && !strcmp(want, "host")))
                CHECK_MSG(ts.transport && strcmp(ts.transport, "host") == 0, "%s", ts.transport);
            double e = rel_err(n, nrhs, X, ref);
            double tol = algo == SAP_BTD_REDUCED_SPIKE ? 2e-2 : (dom ? 1e-10 : 1e-7); /* truncated: approximate */
            CHECK_MSG(e <= tol, "rank %d of %d: k %d nb %d algo %s: error %.3g", rank, p, k, nb,
                      sap_btd_algo_name((sap_btd_algo)algo), e);
            free(BL), free(XL), free(X);
            sap_btd_destroy(T);
        }
        free(B), free(ref), free(M);
        free_sys(&S);
    }
    /* a singular diagonal block on the last process is reported by every process (Spike,
     * BCYCLIC), and a refactor with regular values solves again (BCYCLIC) */
    int k = 3, nb = 4 * p;
    sys S = make_sys(k, nb, 1, 3);
    size_t kk = (size_t)k * k;
    sys R = make_sys(k, nb, 1, 4);
    memset(S.di + (size_t)(nb - 2) * kk, 0, kk * 8);
    memset(S.lo + (size_t)(nb - 2) * kk, 0, kk * 8);
    memset(S.up + (size_t)(nb - 2) * kk, 0, kk * 8);
    sap_btd *T = NULL;
    for (int algo = SAP_BTD_AUTO; algo <= SAP_BTD_BCYCLIC; algo++) {
        sap_btd_options o;
        sap_btd_options_init(&o);
        o.algo = (sap_btd_algo)algo;
        T = NULL;
        CHECK_OK(ctx, sap_btd_create_dist(ctx, NULL, k, 4, S.lo + rank * 4 * kk, S.di + rank * 4 * kk,
                                          S.up + rank * 4 * kk, &o, &T));
        if (!T) continue;
        CHECK_STATUS(ctx, sap_btd_factor(T), SAP_ERR_SINGULAR);
        sap_btd_stats st;
        sap_btd_get_stats(T, &st);
        CHECK_MSG(st.singular_block == nb - 2, "rank %d %s: singular block %lld, expected %d", rank,
                  sap_btd_algo_name((sap_btd_algo)algo), (long long)st.singular_block, nb - 2);
        if (algo == SAP_BTD_BCYCLIC) {
            int n = k * nb;
            double *M = dense_of(&R), *ref = malloc((size_t)n * 8), *X = malloc((size_t)n * 8);
            uint64_t sd = 77;
            for (int i = 0; i < n; i++) ref[i] = urand(&sd);
            double *BL = malloc((size_t)4 * k * 8), *XL = malloc((size_t)4 * k * 8);
            memcpy(BL, ref + (size_t)rank * 4 * k, (size_t)4 * k * 8);
            CHECK(dense_solve(n, 1, M, ref) == 0);
            CHECK_OK(ctx, sap_btd_refactor(T, R.lo + rank * 4 * kk, R.di + rank * 4 * kk, R.up + rank * 4 * kk));
            CHECK_OK(ctx, sap_btd_solve(T, BL, XL));
            CHECK_OK(ctx, sap_btd_gather(T, XL, X));
            double e = rel_err(n, 1, X, ref);
            CHECK_MSG(e <= 1e-10, "rank %d: bcyclic refactor error %.3g", rank, e);
            free(M), free(ref), free(X), free(BL), free(XL);
        }
        sap_btd_destroy(T);
    }
    free_sys(&R);
    /* the transport variable on the cpu backend (no device-to-device transport): a bad value
     * and a forced "nccl" fail creation on every process, "host" works */
    if (p > 1 && sap_context_backend(ctx) == SAP_BACKEND_CPU) {
        const char *old = getenv("SAP_BTD_TRANSPORT");
        char *keep = old ? strdup(old) : NULL;
        static const struct { const char *v; sap_status want; } tv[] = {
            {"bogus", SAP_ERR_INVALID}, {"nccl", SAP_ERR_UNSUPPORTED}, {"host", SAP_OK}};
        for (size_t i = 0; i < sizeof tv / sizeof *tv; i++) {
            setenv("SAP_BTD_TRANSPORT", tv[i].v, 1);
            sap_btd_options o;
            sap_btd_options_init(&o);
            o.algo = SAP_BTD_BCYCLIC;
            T = NULL;
            sap_status cs = sap_btd_create_dist(ctx, NULL, k, 4, S.lo + rank * 4 * kk, S.di + rank * 4 * kk,
                                                S.up + rank * 4 * kk, &o, &T);
            CHECK_MSG(cs == tv[i].want && (T != NULL) == (cs == SAP_OK), "rank %d: SAP_BTD_TRANSPORT=%s: %s", rank,
                      tv[i].v, sap_status_name(cs));
            sap_btd_destroy(T);
        }
        if (keep) setenv("SAP_BTD_TRANSPORT", keep, 1);
        else unsetenv("SAP_BTD_TRANSPORT");
        free(keep);
    }
    /* bad values on the last process only: every process fails creation (none waits) */
    if (p > 1) {
        if (rank == p - 1) S.di[(size_t)(nb - 1) * kk] = NAN;
        T = NULL;
        sap_status cs = sap_btd_create_dist(ctx, NULL, k, 4, S.lo + rank * 4 * kk, S.di + rank * 4 * kk,
                                            S.up + rank * 4 * kk, NULL, &T);
        CHECK_MSG(cs == (rank == p - 1 ? SAP_ERR_NONFINITE : SAP_ERR_INVALID) && T == NULL, "rank %d: %s", rank,
                  sap_status_name(cs));
    }
    free_sys(&S);
    test_dist_orders(ctx, p, rank);
    sap_mpi_finalize();
}

static int cpu_part(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) return 1;
    const char *mpi = getenv("SAP_TEST_MPI");
    if (mpi && strcmp(mpi, "1") == 0) {
        if (!sap_has_mpi()) {
            sap_context_destroy(ctx);
            return 77;
        }
        /* LeakSanitizer cannot see through OpenMPI (its plugins are unloaded at
         * MPI_Finalize): the library's own allocations are counted by the allocator hooks
         * and must all be returned */
        sap_test_failing_alloc fa = {.fail_at = -1};
        sap_context *cctx = sap_test_failing_context(&fa);
        if (!cctx) {
            sap_context_destroy(ctx);
            return 1;
        }
        long base = fa.live;
        test_distributed(cctx);
        CHECK_MSG(fa.live == base, "%ld allocations of the distributed runs not freed", fa.live - base);
        sap_context_destroy(cctx);
        sap_context_destroy(ctx);
        return 0;
    }
    test_algorithms(ctx);
    test_singular_and_refactor(ctx);
    test_csr_and_errors(ctx);
    test_determinism(ctx);
    sap_context_destroy(ctx);
    return 0;
}

/* the process's rank on its host (OpenMPI, MPICH, Slurm), -1 outside a launcher */
static int local_rank(void)
{
    const char *names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}

/* Under mpiexec with --backend cuda (SAP_TEST_MPI=1): the distributed tests on one device
 * per process, device = local rank where the host has that many, else device 0 (the
 * processes then share it: still a valid run, reported). */
static int gpu_distributed(void)
{
    if (!sap_has_mpi()) return 77;
    if (!sap_has_cuda()) {
        printf("%s: no CUDA support, skipped\n", sap_test_name());
        return 77;
    }
    int lr = local_rank();
    sap_context_config cc;
    sap_context_config_init(&cc);
    cc.backend = SAP_BACKEND_CUDA;
    cc.print_level = SAP_PRINT_SILENT;
    cc.device = lr > 0 ? lr : 0;
    sap_context *G = NULL;
    sap_status st = sap_context_create(&G, &cc);
    if (st == SAP_ERR_NO_DEVICE && cc.device > 0) { /* fewer devices than local processes */
        cc.device = 0;
        st = sap_context_create(&G, &cc);
    }
    if (st == SAP_ERR_NO_DEVICE || st == SAP_ERR_NOT_COMPILED) {
        printf("%s: no CUDA device (%s), skipped\n", sap_test_name(), sap_status_name(st));
        return 77;
    }
    if (st != SAP_OK) {
        printf("%s: creating a cuda context failed: %s\n", sap_test_name(), sap_status_name(st));
        return 1;
    }
    printf("%s: local rank %d on cuda device %d (%s)\n", sap_test_name(), lr, cc.device,
           sap_context_device_name(G));
    CHECK(sap_context_backend(G) == SAP_BACKEND_CUDA);
    /* SAP_BTD_TRANSPORT=nccl: skipped where NCCL cannot be loaded or opened on every process
     * (no library, or the processes share one device) */
    const char *want = getenv("SAP_BTD_TRANSPORT");
    if (want && strcmp(want, "nccl") == 0) {
        int p = sap_mpi_init(NULL, NULL);
        double lo[4] = {0}, di[4] = {4, 4, 4, 4}, up[4] = {0};
        sap_btd_options o;
        sap_btd_options_init(&o);
        o.algo = SAP_BTD_BCYCLIC;
        sap_btd *T = NULL;
        sap_status ps = sap_btd_create_dist(G, NULL, 1, 2, lo, di, up, &o, &T);
        sap_btd_destroy(T);
        if (p > 1 && ps == SAP_ERR_UNSUPPORTED) {
            printf("%s: SAP_BTD_TRANSPORT=nccl: %s, skipped\n", sap_test_name(), sap_context_last_error(G));
            sap_context_destroy(G);
            sap_mpi_finalize();
            return 77;
        }
        CHECK_OK(G, ps);
    }
    test_distributed(G);
    sap_context_destroy(G);
    return 0;
}

/* every algorithm and variant on the cuda context against the cpu one */
static int gpu_part(void)
{
    const char *mpi = getenv("SAP_TEST_MPI");
    if (mpi && strcmp(mpi, "1") == 0) return gpu_distributed();
    sap_context *G = NULL;
    int rc = sap_test_gpu_context(sap_test_name(), 1, &G, NULL);
    if (rc) return rc;
    sap_context *C = sap_test_context(SAP_BACKEND_CPU);
    static const int cases[][2] = {{1, 5}, {4, 13}, {16, 33}, {64, 9}, {128, 4}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        sys S = make_sys(cases[ci][0], cases[ci][1], 1, ci + 3);
        int n = S.n, nrhs = 2;
        double *B = malloc((size_t)n * nrhs * 8), *XG = malloc((size_t)n * nrhs * 8);
        double *XC = malloc((size_t)n * nrhs * 8);
        for (int i = 0; i < n * nrhs; i++) B[i] = sin(0.1 * i);
        for (int algo = SAP_BTD_BCYCLIC; algo <= SAP_BTD_REDUCED_SPIKE; algo++)
            for (int v = SAP_BTD_VARIANT_AUTO; v <= SAP_BTD_GETRI; v++) {
                cfg c = {(sap_btd_algo)algo, (sap_btd_variant)v, 2, algo == SAP_BTD_REDUCED_SPIKE};
                double ec = run_cfg(C, &S, &c, nrhs, B, B, XC);
                double eg = run_cfg(G, &S, &c, nrhs, B, B, XG);
                CHECK(ec >= 0 && eg >= 0);
                double d = rel_err(n, nrhs, XG, XC);
                CHECK_MSG(d < 1e-10, "k %d nb %d algo %s variant %s: gpu vs cpu %.3g", S.k, S.nb,
                          sap_btd_algo_name(c.algo), sap_btd_variant_name(c.variant), d);
            }
        free(B), free(XG), free(XC);
        free_sys(&S);
    }
    sap_context_destroy(C);
    sap_context_destroy(G);
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_btd", cpu_part, gpu_part); }
