/* test_krylov.c -- the Krylov solvers through the public API, per backend (sap_test_main).
 * --backend cpu: the Krylov solvers on the cpu backend:
 *  - every method (CG on SPD systems; BiCGStab, BiCGStab(l), GMRES(m), FGMRES(m), IDR(s)
 *    on all) with no preconditioner and with Jacobi in double and float, left and right,
 *    reaches the requested TRUE residual ||b - A x|| / ||b|| (recomputed here with
 *    sap_csr_spmv) on generated and real SPD and nonsymmetric systems, and agrees with a
 *    dense LU solution (LAPACKE_dgesv, or our own Gaussian elimination with partial
 *    pivoting) within the condition-number bound;
 *  - each status: SAP_OK (also b = 0 and an exact x0), SAP_WARN_NOT_CONVERGED (maxit),
 *    SAP_WARN_INTERRUPTED (the monitor), SAP_WARN_STAGNATED (inconsistent singular system), SAP_WARN_BREAKDOWN
 *    (r0hat . A p = 0), SAP_ERR_BREAKDOWN (NaN in A), SAP_ERR_NONFINITE (NaN in b);
 *  - the monitor and the history, quarter-step counting of BiCGStab(2), the
 *    true-residual restarts, float matrices, vector reuse across solves, determinism
 *    (1 vs 2 threads bit-identical), option parsing, and an out-of-memory sweep of
 *    sap_matrix_create + sap_krylov_solve for every method.
 * --backend cuda: every Krylov solver through the public sap_krylov_solve on a cuda
 * context against the same solve on a cpu context: CG, BiCGStab, BiCGStab(2), GMRES(20),
 * FGMRES(30), IDR(4), BiCG, CGS, QMR, TFQMR, IR (inner GMRES and BiCGStab) and
 * block-asynchronous Jacobi (whose repeat need not be bit-identical); no preconditioner, Jacobi in double and in float; right and left
 * preconditioning; SPD and nonsymmetric systems, tiny and one-row systems; every SpMV
 * format on the GPU.  Each GPU solve must reach the tolerance (true residual), agree with
 * the CPU solution, repeat bit-identically, and count its transfers.  Exits 77 (skipped)
 * without CUDA or without a device; SAP_TEST_GPU_DRYRUN=1 runs the "gpu" side on a second
 * cpu context. */
#define SAP_TEST_HAS_GPU_PART 1
#include "testing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef SAP_HAVE_LAPACKE
#include <lapacke.h>
#endif

/* ---- systems ----------------------------------------------------------------------------------- */

typedef struct sys {
    const char *name;
    sap_csr *A;
    double *b, *xref; /* xref: dense LU solution (NULL when too large) */
    double cond;      /* 1-norm condition number estimate (0 when unknown) */
    int spd, has_diag;
    int hard; /* ill-conditioned: unpreconditioned restarted methods may stall */
} sys;

#define DENSE_MAX 1100

/* own dense LU with partial pivoting (column-major), in place; 0 when singular */
static int ge_factor(double *a, sap_int n, sap_int *piv)
{
    for (sap_int k = 0; k < n; k++) {
        sap_int p = k;
        for (sap_int i = k + 1; i < n; i++)
            if (fabs(a[i + k * n]) > fabs(a[p + k * n])) p = i;
        piv[k] = p;
        if (a[p + k * n] == 0.0) return 0;
        if (p != k)
            for (sap_int j = 0; j < n; j++) {
                double t = a[k + j * n];
                a[k + j * n] = a[p + j * n];
                a[p + j * n] = t;
            }
        for (sap_int i = k + 1; i < n; i++) a[i + k * n] /= a[k + k * n];
        for (sap_int j = k + 1; j < n; j++) {
            const double f = a[k + j * n];
            if (f != 0.0)
                for (sap_int i = k + 1; i < n; i++) a[i + j * n] -= a[i + k * n] * f;
        }
    }
    return 1;
}

static void ge_solve(const double *a, sap_int n, const sap_int *piv, double *x)
{
    /* the factorization swapped whole rows: apply every interchange, then L and U */
    for (sap_int k = 0; k < n; k++) {
        double t = x[k];
        x[k] = x[piv[k]];
        x[piv[k]] = t;
    }
    for (sap_int k = 0; k < n; k++)
        for (sap_int i = k + 1; i < n; i++) x[i] -= a[i + k * n] * x[k];
    for (sap_int k = n - 1; k >= 0; k--) {
        x[k] /= a[k + k * n];
        for (sap_int i = 0; i < k; i++) x[i] -= a[i + k * n] * x[k];
    }
}

/* xref = A \ b and an estimate of the 1-norm condition number */
static void dense_reference(sap_context *ctx, sys *S)
{
    const sap_int n = S->A->nrows;
    if (n > DENSE_MAX) return;
    sap_dense *D = NULL;
    if (sap_csr_to_dense(S->A, &D) != SAP_OK) return;
    double anorm = 0.0;
    sap_csr_norm(S->A, SAP_NORM_ONE, &anorm);
    S->xref = malloc(sizeof(double) * (size_t)n);
    memcpy(S->xref, S->b, sizeof(double) * (size_t)n);
#ifdef SAP_HAVE_LAPACKE
    lapack_int *ipiv = malloc(sizeof(lapack_int) * (size_t)n);
    lapack_int info =
        LAPACKE_dgesv(LAPACK_COL_MAJOR, (lapack_int)n, 1, D->val, (lapack_int)n, ipiv, S->xref, (lapack_int)n);
    double rcond = 0.0;
    if (info == 0) LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', (lapack_int)n, D->val, (lapack_int)n, anorm, &rcond);
    S->cond = rcond > 0.0 ? 1.0 / rcond : 0.0;
    free(ipiv);
    (void)ctx;
    if (info == 0 && n <= 200) {
        /* cross-check the fallback elimination against LAPACK on the small systems */
        sap_dense *D2 = NULL;
        sap_int *piv = calloc((size_t)n + 1, sizeof(sap_int));
        double *y = malloc(sizeof(double) * (size_t)n);
        memcpy(y, S->b, sizeof(double) * (size_t)n);
        if (sap_csr_to_dense(S->A, &D2) == SAP_OK && ge_factor(D2->val, n, piv)) {
            ge_solve(D2->val, n, piv, y);
            double e = 0.0, s = 0.0;
            for (sap_int i = 0; i < n; i++) {
                e += (y[i] - S->xref[i]) * (y[i] - S->xref[i]);
                s += S->xref[i] * S->xref[i];
            }
            CHECK_MSG(sqrt(e / s) <= 1e-13 * (S->cond > 1.0 ? S->cond : 1.0), "%s: own LU vs LAPACK", S->name);
        }
        sap_dense_destroy(D2);
        free(piv);
        free(y);
    }
#else
    sap_int *piv = calloc((size_t)n + 1, sizeof(sap_int));
    int info = ge_factor(D->val, n, piv) ? 0 : 1;
    if (info == 0) {
        ge_solve(D->val, n, piv, S->xref);
        /* ||A^-1||_1 column by column */
        double *e = malloc(sizeof(double) * (size_t)n), inorm = 0.0;
        for (sap_int j = 0; j < n; j++) {
            memset(e, 0, sizeof(double) * (size_t)n);
            e[j] = 1.0;
            ge_solve(D->val, n, piv, e);
            double s = 0.0;
            for (sap_int i = 0; i < n; i++) s += fabs(e[i]);
            if (s > inorm) inorm = s;
        }
        S->cond = anorm * inorm;
        free(e);
    }
    free(piv);
    (void)ctx;
#endif
    if (info != 0) {
        free(S->xref);
        S->xref = NULL;
    }
    sap_dense_destroy(D);
}

static void make_system(sap_context *ctx, sys *S, const char *name, sap_csr *A, int spd)
{
    memset(S, 0, sizeof(*S));
    S->name = name;
    S->A = A;
    S->spd = spd;
    if (!A) return;
    const sap_int n = A->nrows;
    double *xs = malloc(sizeof(double) * (size_t)n);
    S->b = malloc(sizeof(double) * (size_t)n);
    sap_gen_xstar(ctx, n, SAP_XSTAR_PARABOLA, 1, xs);
    sap_csr_spmv(A, 1.0, xs, 0.0, S->b);
    free(xs);
    sap_matrix_stats st;
    sap_csr_stats(A, &st);
    S->has_diag = st.zero_diagonal == 0;
    dense_reference(ctx, S);
}

static void free_system(sys *S)
{
    sap_csr_destroy(S->A);
    free(S->b);
    free(S->xref);
}

static double true_residual(const sap_csr *A, const double *b, const double *x)
{
    const sap_int n = A->nrows;
    double *r = malloc(sizeof(double) * (size_t)(n + 1)), rn = 0.0, bn = 0.0;
    sap_csr_spmv(A, 1.0, x, 0.0, r);
    for (sap_int i = 0; i < n; i++) {
        rn += (b[i] - r[i]) * (b[i] - r[i]);
        bn += b[i] * b[i];
    }
    free(r);
    return bn > 0.0 ? sqrt(rn / bn) : sqrt(rn);
}

static double rel_err(const double *x, const double *y, sap_int n)
{
    double e = 0.0, s = 0.0;
    for (sap_int i = 0; i < n; i++) {
        e += (x[i] - y[i]) * (x[i] - y[i]);
        s += y[i] * y[i];
    }
    return s > 0.0 ? sqrt(e / s) : sqrt(e);
}

/* ---- one solve through the public API ------------------------------------------------------------ */

typedef struct solve_cfg {
    sap_krylov_type type;
    int param;
    const char *pc; /* NULL: no preconditioner object */
    sap_precision pc_prec, mat_prec;
    sap_precond_side side;
    sap_spmv_format format;
    double tol;
    sap_int maxit, stag;
    sap_krylov_monitor monitor;
    void *monitor_state;
} solve_cfg;

static void cfg_init(solve_cfg *c, sap_krylov_type type, int param)
{
    memset(c, 0, sizeof(*c));
    c->type = type;
    c->param = param;
    c->pc_prec = SAP_DOUBLE;
    c->mat_prec = SAP_DOUBLE;
    c->side = SAP_PRECOND_RIGHT;
    c->format = SAP_FORMAT_AUTO;
    c->tol = 1e-10;
    c->maxit = 3000;
}

static sap_status run_solve(sap_context *ctx, const sap_csr *A, const double *b, double *x, const solve_cfg *c,
                            sap_krylov_stats *stats)
{
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    sap_matrix_options mo;
    sap_matrix_options_init(&mo);
    mo.format = c->format;
    mo.precision = c->mat_prec;
    sap_status st = sap_matrix_create(ctx, A, &mo, &M);
    if (st == SAP_OK && c->pc) {
        st = sap_precond_create(ctx, c->pc, &P);
        if (st == SAP_OK) st = sap_precond_set_precision(P, c->pc_prec);
        if (st == SAP_OK) st = sap_precond_setup_symbolic(P, A);
        if (st == SAP_OK) st = sap_precond_setup_numeric(P, A);
    }
    sap_krylov_options opt;
    sap_krylov_options_init(&opt);
    opt.type = c->type;
    opt.param = c->param;
    opt.side = c->side;
    opt.tol = c->tol;
    opt.maxit = c->maxit;
    opt.stagnation_window = c->stag;
    opt.monitor = c->monitor;
    opt.monitor_state = c->monitor_state;
    if (st == SAP_OK) st = sap_krylov_create(ctx, &opt, &K);
    if (st == SAP_OK) st = sap_krylov_solve(K, M, P, b, x, stats);
    if (K && stats) {
        /* the history belongs to the solver: keep a copy past its destruction */
        static double hist_copy[1 << 16];
        sap_int len = stats->history_length < (1 << 16) ? stats->history_length : (1 << 16);
        if (len > 0) memcpy(hist_copy, stats->history, sizeof(double) * (size_t)len);
        stats->history = hist_copy;
        stats->history_length = len;
    }
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    return st;
}

/* ---- every method on every system ---------------------------------------------------------------- */

static const struct {
    sap_krylov_type type;
    int param;
} methods[] = {
    {SAP_KRYLOV_CG, 0},        {SAP_KRYLOV_BICGSTAB, 0}, {SAP_KRYLOV_BICGSTABL, 0}, {SAP_KRYLOV_BICGSTABL, 1},
    {SAP_KRYLOV_BICGSTABL, 4}, {SAP_KRYLOV_GMRES, 0},    {SAP_KRYLOV_GMRES, 50},    {SAP_KRYLOV_FGMRES, 0},
    {SAP_KRYLOV_IDR, 0},       {SAP_KRYLOV_IDR, 1},      {SAP_KRYLOV_BICG, 0},      {SAP_KRYLOV_CGS, 0},
    {SAP_KRYLOV_QMR, 0},       {SAP_KRYLOV_TFQMR, 0},    {SAP_KRYLOV_IR, 0},        {SAP_KRYLOV_IR, SAP_KRYLOV_BICGSTAB + 1},
};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

static int solves_done = 0, lenient_warnings = 0;

static void check_system(sap_context *ctx, const sys *S, double tol)
{
    if (!S->A) {
        CHECK_MSG(0, "%s: no matrix", S->name);
        return;
    }
    const sap_int n = S->A->nrows;
    double *x = malloc(sizeof(double) * (size_t)n);
    /* preconditioner variants: none (no object), jacobi double/float x left/right */
    struct {
        const char *pc;
        sap_precision prec;
        sap_precond_side side;
    } pcs[] = {{NULL, SAP_DOUBLE, SAP_PRECOND_RIGHT},    {"jacobi", SAP_DOUBLE, SAP_PRECOND_RIGHT},
               {"jacobi", SAP_DOUBLE, SAP_PRECOND_LEFT}, {"jacobi", SAP_FLOAT, SAP_PRECOND_RIGHT},
               {"jacobi", SAP_FLOAT, SAP_PRECOND_LEFT},  {"none", SAP_DOUBLE, SAP_PRECOND_LEFT}};
    for (size_t m = 0; m < NMETHODS; m++) {
        if (methods[m].type == SAP_KRYLOV_CG && !S->spd) continue;
        for (size_t p = 0; p < sizeof(pcs) / sizeof(pcs[0]); p++) {
            if (pcs[p].pc && !strcmp(pcs[p].pc, "jacobi") && !S->has_diag) continue;
            /* CG is side-independent; FGMRES is right-only: skip the duplicates */
            if ((methods[m].type == SAP_KRYLOV_CG || methods[m].type == SAP_KRYLOV_FGMRES) &&
                pcs[p].side == SAP_PRECOND_LEFT)
                continue;
            solve_cfg c;
            cfg_init(&c, methods[m].type, methods[m].param);
            c.pc = pcs[p].pc;
            c.pc_prec = pcs[p].prec;
            c.side = pcs[p].side;
            c.tol = tol;
            memset(x, 0, sizeof(double) * (size_t)n);
            /* Runs that may legitimately fail to converge: no preconditioner on a hard
             * system, and a float preconditioner in a non-flexible method when
             * cond(A) * eps_float is not small (the preconditioner then varies from one
             * application to the next by more than the method tolerates). */
            const int lenient = (S->hard && (!c.pc || !strcmp(c.pc, "none"))) ||
                                (c.pc_prec == SAP_FLOAT && S->cond * 6e-8 > 1e-3 && c.type != SAP_KRYLOV_FGMRES);
            sap_krylov_stats ks;
            sap_status st = run_solve(ctx, S->A, S->b, x, &c, &ks);
            solves_done++;
            char what[200];
            snprintf(what, sizeof(what), "%s: %s(%d) pc=%s/%s side=%s", S->name, sap_krylov_name(c.type), c.param,
                     c.pc ? c.pc : "-", c.pc_prec == SAP_FLOAT ? "float" : "double",
                     c.side == SAP_PRECOND_LEFT ? "left" : "right");
            if (lenient && st > 0) {
                lenient_warnings++;
                CHECK_MSG(fabs(ks.true_residual - true_residual(S->A, S->b, x)) <= 1e-6 * ks.true_residual,
                          "%s: reported true residual", what);
                continue;
            }
            CHECK_MSG(st == SAP_OK, "%s: %s (%s) after %g iterations", what, sap_status_name(st),
                      sap_context_last_error(ctx), ks.iterations);
            if (st != SAP_OK) continue;
            const double tr = true_residual(S->A, S->b, x);
            CHECK_MSG(tr <= tol, "%s: true residual %.3e > %.3e", what, tr, tol);
            CHECK_MSG(fabs(ks.true_residual - tr) <= 1e-3 * tol + 1e-14, "%s: reported true residual %.3e vs %.3e",
                      what, ks.true_residual, tr);
            CHECK_MSG(ks.spmv_count >= (sap_int)ks.iterations, "%s: %lld SpMVs for %g iterations", what,
                      (long long)ks.spmv_count, ks.iterations);
            if (methods[m].type == SAP_KRYLOV_BICGSTABL) {
                const int l = methods[m].param ? methods[m].param : 2;
                const double steps = ks.iterations * 2.0 * l;
                CHECK_MSG(fabs(steps - floor(steps + 0.5)) < 1e-9, "%s: %g iterations not a multiple of 1/%d", what,
                          ks.iterations, 2 * l);
            }
            if (S->xref) {
                const double e = rel_err(x, S->xref, n), bound = 10.0 * (S->cond > 1.0 ? S->cond : 1.0) * tol + 1e-12;
                CHECK_MSG(e <= bound, "%s: error vs dense LU %.3e > %.3e (cond %.3g)", what, e, bound, S->cond);
            }
        }
    }
    free(x);
}

/* The synthetic generator hides the band by independent row and column permutations;
 * permuting the columns by q^-1 p makes it a symmetric permutation of the band again
 * (diagonal dominance d, Jacobi applicable). */
static sap_csr *synthetic_system(sap_context *ctx, sap_int n, sap_int k, double d, double fill, uint64_t seed)
{
    sap_csr *A = NULL, *B = NULL;
    sap_int *p = malloc(sizeof(sap_int) * (size_t)n), *q = malloc(sizeof(sap_int) * (size_t)n),
            *qi = malloc(sizeof(sap_int) * (size_t)n), *c = malloc(sizeof(sap_int) * (size_t)n);
    if (sap_gen_synthetic(ctx, n, k, d, fill, seed, &A, p, q) == SAP_OK && sap_perm_invert(ctx, n, q, qi) == SAP_OK) {
        for (sap_int j = 0; j < n; j++) c[j] = qi[p[j]];
        sap_csr_permute(A, NULL, c, &B);
    }
    sap_csr_destroy(A);
    free(p);
    free(q);
    free(qi);
    free(c);
    return B;
}

static void test_systems(sap_context *ctx)
{
    sys S;
    sap_csr *A = NULL;
    /* generated SPD */
    sap_gen_poisson2d(ctx, 20, 17, &A);
    make_system(ctx, &S, "poisson2d 20x17", A, 1);
    check_system(ctx, &S, 1e-10);
    free_system(&S);
    A = NULL;
    sap_gen_poisson3d(ctx, 7, 8, 6, &A);
    make_system(ctx, &S, "poisson3d 7x8x6", A, 1);
    check_system(ctx, &S, 1e-10);
    free_system(&S);
    A = NULL;
    sap_gen_banded(ctx, 500, 6, 1.5, 1, 11, &A);
    make_system(ctx, &S, "banded symmetric N=500 K=6 d=1.5", A, 1);
    check_system(ctx, &S, 1e-10);
    free_system(&S);
    /* generated nonsymmetric */
    A = NULL;
    sap_gen_banded(ctx, 601, 5, 1.5, 0, 12, &A);
    make_system(ctx, &S, "banded N=601 K=5 d=1.5", A, 0);
    check_system(ctx, &S, 1e-10);
    free_system(&S);
    make_system(ctx, &S, "synthetic N=450 K=8 d=1.5 fill=0.6", synthetic_system(ctx, 450, 8, 1.5, 0.6, 3), 0);
    check_system(ctx, &S, 1e-10);
    free_system(&S);

    /* real matrices from the collection (skipped politely when absent) */
    static const struct {
        const char *name;
        int spd, hard;
        double tol;
    } real[] = {{"bcsstk01", 1, 1, 1e-10}, {"nos4", 1, 0, 1e-10},  {"mesh1em6", 1, 0, 1e-10},
                {"bcsstk05", 1, 1, 1e-8},  {"cage5", 0, 0, 1e-10}, {"fs_760_1", 0, 0, 1e-10},
                {"cage8", 0, 0, 1e-8}};
    int found = 0;
    for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
        A = sap_test_load_matrix(ctx, real[i].name);
        if (!A) continue;
        found++;
        make_system(ctx, &S, real[i].name, A, real[i].spd);
        S.hard = real[i].hard;
        check_system(ctx, &S, real[i].tol);
        free_system(&S);
    }
    if (!found)
        printf("test_krylov: matrix collection not found in %s, real matrices skipped\n", sap_test_matrix_dir());
}

/* ---- statuses --------------------------------------------------------------------------------------- */

static void test_trivial(sap_context *ctx)
{
    sap_csr *A = NULL;
    sap_gen_poisson2d(ctx, 6, 6, &A);
    const sap_int n = 36;
    double b[36], x[36], xs[36];
    for (int m = 0; m < (int)NMETHODS; m++) {
        solve_cfg c;
        cfg_init(&c, methods[m].type, methods[m].param);
        sap_krylov_stats ks;
        /* b = 0: x = 0 at once */
        for (int i = 0; i < n; i++) {
            b[i] = 0.0;
            x[i] = 5.0;
        }
        CHECK_OK(ctx, run_solve(ctx, A, b, x, &c, &ks));
        int zero = 1;
        for (int i = 0; i < n; i++) zero &= x[i] == 0.0;
        CHECK(zero && ks.iterations == 0.0 && ks.status == SAP_OK);
        /* x0 = the solution: converged at iteration 0 */
        for (int i = 0; i < n; i++) xs[i] = x[i] = 1.0 + i % 3;
        sap_csr_spmv(A, 1.0, xs, 0.0, b);
        CHECK_OK(ctx, run_solve(ctx, A, b, x, &c, &ks));
        CHECK(ks.iterations == 0.0);
        CHECK(ks.history_length == 1 && ks.history[0] <= 1e-15);
        CHECK(rel_err(x, xs, n) == 0.0);
    }
    sap_csr_destroy(A);
    /* the empty system */
    sap_csr *E = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, 0, 0, 0, &E));
    for (int m = 0; m < (int)NMETHODS; m++) {
        solve_cfg c;
        cfg_init(&c, methods[m].type, methods[m].param);
        c.pc = "jacobi";
        sap_krylov_stats ks;
        CHECK_OK(ctx, run_solve(ctx, E, NULL, NULL, &c, &ks));
        CHECK(ks.iterations == 0.0);
    }
    sap_csr_destroy(E);
}

static void test_statuses(sap_context *ctx)
{
    sap_krylov_stats ks;
    solve_cfg c;
    /* maxit = 2 on a hard system */
    sap_csr *A = NULL;
    sap_gen_poisson2d(ctx, 30, 30, &A);
    const sap_int n = 900;
    double *b = malloc(sizeof(double) * n), *x = malloc(sizeof(double) * n);
    for (sap_int i = 0; i < n; i++) b[i] = 1.0;
    for (size_t m = 0; m < NMETHODS; m++) {
        cfg_init(&c, methods[m].type, methods[m].param);
        c.maxit = 2;
        memset(x, 0, sizeof(double) * n);
        CHECK_STATUS(ctx, run_solve(ctx, A, b, x, &c, &ks), SAP_WARN_NOT_CONVERGED);
        CHECK_MSG(ks.iterations == 2.0, "%s: %g iterations with maxit 2", sap_krylov_name(c.type), ks.iterations);
        CHECK(strstr(sap_context_last_error(ctx), "iterations") != NULL);
        CHECK(isfinite(ks.relative_residual) && ks.relative_residual > 1e-6);
        CHECK(fabs(ks.true_residual - true_residual(A, b, x)) < 1e-10);
        /* maxit = 0: nothing done */
        c.maxit = 0;
        CHECK_STATUS(ctx, run_solve(ctx, A, b, x, &c, &ks), SAP_WARN_NOT_CONVERGED);
        CHECK(ks.iterations == 0.0);
    }
    sap_csr_destroy(A);
    free(b);
    free(x);

    /* stagnation: diag(1, ..., n-1, 0) with b = ones is inconsistent; the residual
     * cannot drop below 1/sqrt(n) */
    {
        const sap_int m = 40;
        sap_int rowptr[41], colind[40];
        double val[40], bb[40], xx[40];
        for (sap_int i = 0; i < m; i++) {
            rowptr[i] = i;
            colind[i] = i;
            val[i] = i + 1 < m ? (double)(i + 1) : 0.0;
            bb[i] = 1.0;
        }
        rowptr[m] = m;
        sap_csr *D = NULL;
        CHECK_OK(ctx, sap_csr_from_arrays(ctx, m, m, rowptr, colind, val, &D));
        const sap_krylov_type st_methods[] = {SAP_KRYLOV_GMRES, SAP_KRYLOV_FGMRES};
        for (int k = 0; k < 2; k++) {
            cfg_init(&c, st_methods[k], 10);
            c.stag = 15;
            memset(xx, 0, sizeof(xx));
            CHECK_STATUS(ctx, run_solve(ctx, D, bb, xx, &c, &ks), SAP_WARN_STAGNATED);
            CHECK(strstr(sap_context_last_error(ctx), "stagnated") != NULL);
            CHECK(ks.iterations < 100);
            CHECK(fabs(ks.relative_residual - 1.0 / sqrt((double)m)) < 1e-6);
        }
        /* the other methods: stagnation, breakdown or the iteration limit, never OK */
        for (size_t q = 0; q < NMETHODS; q++) {
            cfg_init(&c, methods[q].type, methods[q].param);
            c.stag = 25;
            c.maxit = 400;
            memset(xx, 0, sizeof(xx));
            sap_status st = run_solve(ctx, D, bb, xx, &c, &ks);
            CHECK_MSG(st == SAP_WARN_STAGNATED || st == SAP_WARN_BREAKDOWN || st == SAP_WARN_NOT_CONVERGED ||
                          st == SAP_ERR_BREAKDOWN,
                      "%s on an inconsistent system: %s", sap_krylov_name(c.type), sap_status_name(st));
        }
        /* consistent singular system (b_n = 0): GMRES converges */
        bb[m - 1] = 0.0;
        cfg_init(&c, SAP_KRYLOV_GMRES, 0);
        memset(xx, 0, sizeof(xx));
        CHECK_OK(ctx, run_solve(ctx, D, bb, xx, &c, &ks));
        CHECK(true_residual(D, bb, xx) <= 1e-10);
        sap_csr_destroy(D);
    }

    /* breakdown: A = [[0, 1], [1, 0]], b = e1: r0hat . A r0 = 0 */
    {
        sap_int rowptr[3] = {0, 1, 2}, colind[2] = {1, 0};
        double val[2] = {1.0, 1.0}, bb[2] = {1.0, 0.0}, xx[2];
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_csr_from_arrays(ctx, 2, 2, rowptr, colind, val, &B));
        const sap_krylov_type bd[] = {SAP_KRYLOV_CG, SAP_KRYLOV_BICGSTAB, SAP_KRYLOV_BICGSTABL};
        for (int k = 0; k < 3; k++) {
            cfg_init(&c, bd[k], 0);
            xx[0] = xx[1] = 0.0;
            CHECK_STATUS(ctx, run_solve(ctx, B, bb, xx, &c, &ks), SAP_WARN_BREAKDOWN);
            CHECK(strstr(sap_context_last_error(ctx), "breakdown") != NULL);
            CHECK(strstr(sap_context_last_error(ctx), sap_krylov_name(bd[k])) != NULL);
            CHECK(xx[0] == 0.0 && xx[1] == 0.0); /* the best iterate: x0 */
        }
        /* GMRES solves it exactly (a happy breakdown at step 2) */
        cfg_init(&c, SAP_KRYLOV_GMRES, 0);
        xx[0] = xx[1] = 0.0;
        CHECK_OK(ctx, run_solve(ctx, B, bb, xx, &c, &ks));
        CHECK(fabs(xx[0]) < 1e-15 && fabs(xx[1] - 1.0) < 1e-15);
        sap_csr_destroy(B);
    }

    /* NaN in A: SAP_ERR_BREAKDOWN; NaN in b: SAP_ERR_NONFINITE */
    {
        sap_csr *N = NULL;
        sap_gen_poisson2d(ctx, 5, 5, &N);
        double bb[25], xx[25];
        for (int i = 0; i < 25; i++) bb[i] = 1.0;
        N->val[7] = NAN;
        for (size_t q = 0; q < NMETHODS; q++) {
            cfg_init(&c, methods[q].type, methods[q].param);
            memset(xx, 0, sizeof(xx));
            CHECK_STATUS(ctx, run_solve(ctx, N, bb, xx, &c, &ks), SAP_ERR_BREAKDOWN);
            CHECK(strstr(sap_context_last_error(ctx), "nan") != NULL || strstr(sap_context_last_error(ctx), "NaN"));
        }
        N->val[7] = -1.0;
        bb[3] = INFINITY;
        cfg_init(&c, SAP_KRYLOV_BICGSTABL, 0);
        CHECK_STATUS(ctx, run_solve(ctx, N, bb, xx, &c, &ks), SAP_ERR_NONFINITE);
        bb[3] = 1.0;
        xx[2] = NAN;
        CHECK_STATUS(ctx, run_solve(ctx, N, bb, xx, &c, &ks), SAP_ERR_NONFINITE);
        sap_csr_destroy(N);
    }
}

/* ---- monitor, history, quarter steps ----------------------------------------------------------------- */

typedef struct mon {
    int calls, stop_after;
    double last_iter, iters[4096], res[4096];
    int monotone;
} mon;

static int monitor(void *state, double iteration, double relres)
{
    mon *m = state;
    if (iteration <= m->last_iter) m->monotone = 0;
    m->last_iter = iteration;
    if (m->calls < 4096) {
        m->iters[m->calls] = iteration;
        m->res[m->calls] = relres;
    }
    m->calls++;
    return m->stop_after > 0 && m->calls >= m->stop_after;
}

static void test_monitor(sap_context *ctx)
{
    sap_csr *A = NULL;
    sap_gen_banded(ctx, 400, 4, 1.2, 0, 21, &A);
    const sap_int n = 400;
    double *b = malloc(sizeof(double) * n), *x = malloc(sizeof(double) * n);
    for (sap_int i = 0; i < n; i++) b[i] = sin(0.1 * (double)i);
    for (size_t q = 0; q < NMETHODS; q++) {
        if (methods[q].type == SAP_KRYLOV_CG) continue;
        solve_cfg c;
        cfg_init(&c, methods[q].type, methods[q].param);
        mon m;
        memset(&m, 0, sizeof(m));
        m.monotone = 1;
        m.last_iter = -1.0;
        c.monitor = monitor;
        c.monitor_state = &m;
        sap_krylov_stats ks;
        memset(x, 0, sizeof(double) * n);
        CHECK_OK(ctx, run_solve(ctx, A, b, x, &c, &ks));
        /* one history entry per monitor call, after the initial residual */
        CHECK_MSG(ks.history_length == m.calls + 1, "%s: history %lld, monitor calls %d", sap_krylov_name(c.type),
                  (long long)ks.history_length, m.calls);
        CHECK(m.monotone);
        CHECK(m.last_iter == ks.iterations);
        CHECK(ks.history[0] == 1.0);
        int same = 1;
        for (int i = 0; i < m.calls && i < 4096; i++) same &= ks.history[i + 1] == m.res[i];
        CHECK(same);
        if (c.type == SAP_KRYLOV_BICGSTABL && c.param == 0) {
            /* quarter steps: 0.25, 0.5, (0.75,) 1, 1.25, ... */
            int quarters = 1;
            for (int i = 0; i < m.calls && i < 4096; i++)
                quarters &= fabs(m.iters[i] * 4 - floor(m.iters[i] * 4 + 0.5)) < 1e-12;
            CHECK(quarters);
            CHECK(m.iters[0] == 0.25 && m.iters[1] == 0.5);
        }
        if (c.type == SAP_KRYLOV_BICGSTAB) CHECK(m.iters[0] == 0.5 && m.iters[1] == 1.0);
        /* stop after 3 calls */
        memset(&m, 0, sizeof(m));
        m.stop_after = 3;
        m.last_iter = -1.0;
        memset(x, 0, sizeof(double) * n);
        CHECK_STATUS(ctx, run_solve(ctx, A, b, x, &c, &ks), SAP_WARN_INTERRUPTED);
        CHECK(m.calls == 3);
        CHECK(strstr(sap_context_last_error(ctx), "monitor") != NULL);
        CHECK(ks.iterations == m.iters[2]);
    }
    free(b);
    free(x);
    sap_csr_destroy(A);
}

/* float matrices; a true-residual restart; tolerance out of reach in float */
static void test_precision(sap_context *ctx)
{
    sap_csr *A = NULL;
    sap_gen_banded(ctx, 300, 5, 1.3, 0, 31, &A);
    const sap_int n = 300;
    double *b = malloc(sizeof(double) * n), *x = malloc(sizeof(double) * n);
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + (double)(i % 5);
    for (size_t q = 1; q < NMETHODS; q++) {
        solve_cfg c;
        cfg_init(&c, methods[q].type, methods[q].param);
        c.mat_prec = SAP_FLOAT;
        c.pc = "jacobi";
        c.pc_prec = SAP_FLOAT;
        c.tol = 1e-5;
        sap_krylov_stats ks;
        memset(x, 0, sizeof(double) * n);
        CHECK_OK(ctx, run_solve(ctx, A, b, x, &c, &ks));
        CHECK_MSG(true_residual(A, b, x) <= 1e-5, "%s float: %.3e", sap_krylov_name(c.type), true_residual(A, b, x));
        /* 1e-13 is below what float arithmetic can reach: an honest warning */
        c.tol = 1e-13;
        c.stag = 50;
        memset(x, 0, sizeof(double) * n);
        sap_status st = run_solve(ctx, A, b, x, &c, &ks);
        CHECK_MSG(st == SAP_WARN_NOT_CONVERGED || st == SAP_WARN_STAGNATED || st == SAP_WARN_BREAKDOWN,
                  "%s float tol 1e-13: %s", sap_krylov_name(c.type), sap_status_name(st));
        CHECK(true_residual(A, b, x) < 1e-4);
    }
    free(b);
    free(x);
    sap_csr_destroy(A);
}

/* vectors cached in the solver: reuse across solves, then another size */
static void test_reuse(sap_context *ctx)
{
    sap_csr *A = NULL, *B = NULL;
    sap_gen_poisson2d(ctx, 12, 12, &A);
    sap_gen_poisson2d(ctx, 9, 13, &B);
    sap_matrix *MA = NULL, *MB = NULL;
    CHECK_OK(ctx, sap_matrix_create(ctx, A, NULL, &MA));
    CHECK_OK(ctx, sap_matrix_create(ctx, B, NULL, &MB));
    const sap_krylov_type types[] = {SAP_KRYLOV_IDR, SAP_KRYLOV_GMRES, SAP_KRYLOV_BICGSTABL};
    double b[144], x1[144], x2[144];
    for (int i = 0; i < 144; i++) b[i] = cos((double)i);
    for (int t = 0; t < 3; t++) {
        sap_krylov_options o;
        sap_krylov_options_init(&o);
        o.type = types[t];
        sap_krylov *K = NULL;
        CHECK_OK(ctx, sap_krylov_create(ctx, &o, &K));
        sap_krylov_stats s1, s2;
        memset(x1, 0, sizeof(x1));
        memset(x2, 0, sizeof(x2));
        CHECK_OK(ctx, sap_krylov_solve(K, MA, NULL, b, x1, &s1));
        CHECK_OK(ctx, sap_krylov_solve(K, MB, NULL, b, x2, &s2));
        CHECK(true_residual(B, b, x2) <= 1e-10);
        memset(x2, 0, sizeof(x2));
        CHECK_OK(ctx, sap_krylov_solve(K, MA, NULL, b, x2, &s2));
        CHECK(memcmp(x1, x2, sizeof(x1)) == 0 && s1.iterations == s2.iterations);
        /* a preconditioner set up for another size */
        sap_precond *P = NULL;
        CHECK_OK(ctx, sap_precond_create(ctx, "jacobi", &P));
        CHECK_STATUS(ctx, sap_krylov_solve(K, MA, P, b, x2, &s2), SAP_ERR_INVALID); /* not set up */
        CHECK_OK(ctx, sap_precond_setup_numeric(P, B));
        CHECK_STATUS(ctx, sap_krylov_solve(K, MA, P, b, x2, &s2), SAP_ERR_INVALID); /* wrong size */
        sap_precond_destroy(P);
        sap_krylov_destroy(K);
    }
    /* rectangular matrices are refused */
    sap_csr *R = NULL;
    CHECK_OK(ctx, sap_csr_create(ctx, 3, 4, 0, &R));
    sap_matrix *MR = NULL;
    CHECK_OK(ctx, sap_matrix_create(ctx, R, NULL, &MR));
    sap_krylov *K = NULL;
    CHECK_OK(ctx, sap_krylov_create(ctx, NULL, &K));
    CHECK_STATUS(ctx, sap_krylov_solve(K, MR, NULL, b, x1, NULL), SAP_ERR_NOT_SQUARE);
    CHECK_STATUS(ctx, sap_krylov_solve(K, NULL, NULL, b, x1, NULL), SAP_ERR_INVALID);
    CHECK(sap_krylov_solve(NULL, MA, NULL, b, x1, NULL) == SAP_ERR_INVALID);
    sap_krylov_destroy(K);
    sap_krylov_destroy(NULL);
    sap_matrix_destroy(MR);
    sap_csr_destroy(R);
    sap_matrix_destroy(MA);
    sap_matrix_destroy(MB);
    sap_csr_destroy(A);
    sap_csr_destroy(B);
}

/* 1 and 2 threads give bit-identical solutions and iteration counts */
static void test_determinism(void)
{
    sap_context *c1 = sap_test_context(SAP_BACKEND_CPU), *c2 = sap_test_context(SAP_BACKEND_CPU);
    sap_context_set_threads(c1, 1);
    sap_context_set_threads(c2, 2);
    sap_csr *A = NULL;
    sap_gen_banded(c1, 40000, 3, 1.1, 0, 41, &A);
    const sap_int n = 40000;
    double *b = malloc(sizeof(double) * n), *x1 = malloc(sizeof(double) * n), *x2 = malloc(sizeof(double) * n);
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + sin((double)i);
    const sap_krylov_type types[] = {SAP_KRYLOV_BICGSTABL, SAP_KRYLOV_GMRES, SAP_KRYLOV_IDR};
    for (int t = 0; t < 3; t++) {
        solve_cfg c;
        cfg_init(&c, types[t], 0);
        c.pc = "jacobi";
        c.tol = 1e-8;
        sap_krylov_stats s1, s2;
        memset(x1, 0, sizeof(double) * n);
        memset(x2, 0, sizeof(double) * n);
        CHECK_OK(c1, run_solve(c1, A, b, x1, &c, &s1));
        CHECK_OK(c2, run_solve(c2, A, b, x2, &c, &s2));
        CHECK_MSG(memcmp(x1, x2, sizeof(double) * n) == 0 && s1.iterations == s2.iterations,
                  "%s: results depend on the thread count", sap_krylov_name(types[t]));
    }
    /* CG on 3D Poisson */
    sap_csr *P = NULL;
    sap_gen_poisson3d(c1, 34, 34, 34, &P);
    solve_cfg c;
    cfg_init(&c, SAP_KRYLOV_CG, 0);
    c.tol = 1e-8;
    sap_krylov_stats s1, s2;
    const sap_int m = P->nrows;
    double *y1 = calloc((size_t)m, sizeof(double)), *y2 = calloc((size_t)m, sizeof(double)),
           *bb = malloc(sizeof(double) * (size_t)m);
    for (sap_int i = 0; i < m; i++) bb[i] = 1.0;
    CHECK_OK(c1, run_solve(c1, P, bb, y1, &c, &s1));
    CHECK_OK(c2, run_solve(c2, P, bb, y2, &c, &s2));
    CHECK(memcmp(y1, y2, sizeof(double) * (size_t)m) == 0 && s1.iterations == s2.iterations);
    free(y1);
    free(y2);
    free(bb);
    sap_csr_destroy(P);
    free(b);
    free(x1);
    free(x2);
    sap_csr_destroy(A);
    sap_context_destroy(c1);
    sap_context_destroy(c2);
}

static void test_parse(sap_context *ctx)
{
    sap_krylov_type t;
    int p = -1;
    CHECK_OK(ctx, sap_krylov_parse("cg", &t, &p));
    CHECK(t == SAP_KRYLOV_CG && p == 0);
    CHECK_OK(ctx, sap_krylov_parse("bicgstabl:2", &t, &p));
    CHECK(t == SAP_KRYLOV_BICGSTABL && p == 2);
    CHECK_OK(ctx, sap_krylov_parse("bicgstabl", &t, &p));
    CHECK(t == SAP_KRYLOV_BICGSTABL && p == 0);
    CHECK_OK(ctx, sap_krylov_parse("gmres:20", &t, &p));
    CHECK(t == SAP_KRYLOV_GMRES && p == 20);
    CHECK_OK(ctx, sap_krylov_parse("fgmres:30", &t, &p));
    CHECK(t == SAP_KRYLOV_FGMRES && p == 30);
    CHECK_OK(ctx, sap_krylov_parse("idr:4", &t, &p));
    CHECK(t == SAP_KRYLOV_IDR && p == 4);
    CHECK_OK(ctx, sap_krylov_parse("bicgstab", &t, &p));
    CHECK(t == SAP_KRYLOV_BICGSTAB);
    CHECK_OK(ctx, sap_krylov_parse("GMRES:25", &t, &p)); /* names are case-insensitive (issue 12) */
    CHECK(t == SAP_KRYLOV_GMRES && p == 25);
    const char *bad[] = {"",        "cgs:2",  "cg:2",   "gmres:",        "gmres:0",
                         "gmres:x", "idr:-1", "idr:65", "bicgstabl:2:3", "GMRES:0"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_MSG(sap_krylov_parse(bad[i], &t, &p) == SAP_ERR_INVALID, "'%s' accepted", bad[i]);
    CHECK(sap_krylov_parse(NULL, &t, &p) == SAP_ERR_INVALID);
    const char *names[] = {"cg", "bicgstab", "bicgstabl", "gmres", "fgmres", "idr", "bicg", "cgs", "qmr", "tfqmr", "ir",
                           "async-jacobi"};
    for (int i = 0; i < 12; i++) CHECK(strcmp(sap_krylov_name((sap_krylov_type)i), names[i]) == 0);
    CHECK(strcmp(sap_krylov_name((sap_krylov_type)99), "unknown") == 0);
    /* option validation */
    sap_krylov_options o;
    sap_krylov_options_init(&o);
    CHECK(o.type == SAP_KRYLOV_BICGSTABL && o.tol == 1e-10 && o.maxit == 1000 && o.side == SAP_PRECOND_RIGHT);
    sap_krylov *K = NULL;
    o.tol = -1.0;
    CHECK_STATUS(ctx, sap_krylov_create(ctx, &o, &K), SAP_ERR_INVALID);
    o.tol = NAN;
    CHECK_STATUS(ctx, sap_krylov_create(ctx, &o, &K), SAP_ERR_INVALID);
    o.tol = 1e-8;
    o.param = 17;
    CHECK_STATUS(ctx, sap_krylov_create(ctx, &o, &K), SAP_ERR_INVALID);
    o.param = 0;
    o.maxit = -1;
    CHECK_STATUS(ctx, sap_krylov_create(ctx, &o, &K), SAP_ERR_INVALID);
    o.maxit = 10;
    o.type = SAP_KRYLOV_CG;
    o.param = 3;
    CHECK_STATUS(ctx, sap_krylov_create(ctx, &o, &K), SAP_ERR_INVALID);
    o.type = (sap_krylov_type)42;
    o.param = 0;
    CHECK_STATUS(ctx, sap_krylov_create(ctx, &o, &K), SAP_ERR_INVALID);
    CHECK(K == NULL);
}

/* out of memory anywhere in sap_matrix_create + preconditioner + sap_krylov_solve */
static void test_oom(void)
{
    for (size_t q = 0; q < NMETHODS; q++) {
        int done = 0;
        for (long k = 0; k < 400 && !done; k++) {
            sap_test_failing_alloc state = {-1, 0, 0};
            sap_context *ctx = sap_test_failing_context(&state);
            if (!ctx) {
                CHECK(0);
                return;
            }
            sap_csr *A = NULL;
            sap_gen_poisson2d(ctx, 7, 6, &A);
            double b[42], x[42];
            for (int i = 0; i < 42; i++) {
                b[i] = 1.0;
                x[i] = 0.0;
            }
            state.fail_at = state.count + k;
            solve_cfg c;
            cfg_init(&c, methods[q].type, methods[q].param);
            c.pc = "jacobi";
            c.pc_prec = k % 2 ? SAP_FLOAT : SAP_DOUBLE;
            sap_krylov_stats ks;
            sap_status st = run_solve(ctx, A, b, x, &c, &ks);
            CHECK_MSG(st == SAP_OK || st == SAP_ERR_OUT_OF_MEMORY, "%s fail at %ld: %s", sap_krylov_name(c.type), k,
                      sap_status_name(st));
            if (st == SAP_OK) {
                done = 1;
                CHECK(true_residual(A, b, x) <= 1e-10);
            }
            sap_csr_destroy(A);
            sap_context_destroy(ctx);
            CHECK_MSG(state.live == 0, "%s: leak of %ld blocks (fail at %ld)", sap_krylov_name(c.type), state.live, k);
        }
        CHECK(done);
    }
    /* sap_krylov_solve_many with SaP-D: the allocations failing from each one on (a
     * failure inside a lockstep group retries with fewer columns at once, at the end one
     * after another, which then fail too): SAP_ERR_OUT_OF_MEMORY or the solution, no leak */
    static const sap_krylov_type many_types[] = {SAP_KRYLOV_RICHARDSON, SAP_KRYLOV_BICGSTABL, SAP_KRYLOV_CG,
                                                 SAP_KRYLOV_GMRES, SAP_KRYLOV_BICGSTAB, SAP_KRYLOV_CGS,
                                                 SAP_KRYLOV_TFQMR, SAP_KRYLOV_IDR};
    for (size_t q = 0; q < 8; q++) {
        int done = 0;
        for (long f = 0; f < 600 && !done; f++) {
            sap_test_failing_alloc state = {-1, 0, 0};
            sap_context *ctx = sap_test_failing_context(&state);
            if (!ctx) {
                CHECK(0);
                return;
            }
            sap_csr *A = NULL;
            sap_gen_banded(ctx, 300, 6, 2.0, 1, 3, &A);
            const sap_int n = 300, k = 5;
            double B[1500], X[1500];
            for (int i = 0; i < 1500; i++) {
                B[i] = 1.0 + (double)(i % 7);
                X[i] = 0.0;
            }
            sap_matrix *M = NULL;
            sap_precond *P = NULL;
            sap_krylov *K = NULL;
            sap_krylov_options o;
            sap_krylov_options_init(&o);
            o.type = many_types[q];
            state.fail_at = state.count + f;
            sap_status st = sap_matrix_create(ctx, A, NULL, &M);
            if (st == SAP_OK) st = sap_precond_create(ctx, "sap-d", &P);
            if (st == SAP_OK) st = sap_precond_set_options(P, "partitions=3");
            if (st == SAP_OK) st = sap_precond_setup_numeric(P, A);
            if (st == SAP_OK) st = sap_krylov_create(ctx, &o, &K);
            if (st == SAP_OK) st = sap_krylov_solve_many(K, M, P, k, B, n, X, n, NULL);
            CHECK_MSG(st == SAP_OK || st == SAP_ERR_OUT_OF_MEMORY, "solve_many %s fail at %ld: %s",
                      sap_krylov_name(o.type), f, sap_status_name(st));
            if (st == SAP_OK) {
                done = 1;
                for (sap_int c = 0; c < k; c++) CHECK(true_residual(A, B + c * n, X + c * n) <= 1e-10);
            }
            sap_krylov_destroy(K);
            sap_precond_destroy(P);
            sap_matrix_destroy(M);
            sap_csr_destroy(A);
            sap_context_destroy(ctx);
            CHECK_MSG(state.live == 0, "solve_many %s: leak of %ld blocks (fail at %ld)", sap_krylov_name(o.type),
                      state.live, f);
        }
        CHECK_MSG(done, "solve_many %s never succeeded", sap_krylov_name(many_types[q]));
    }
}


/* ---- the rest of the MAGMA-sparse list (issue 16): BiCG, CGS, QMR, TFQMR, IR, async Jacobi --- */

/* 2D convection-diffusion, upwind differences on an nx x ny grid (nonsymmetric M-matrix) */
static sap_csr *convdiff2d(sap_context *ctx, sap_int nx, sap_int ny, double cx, double cy)
{
    const sap_int n = nx * ny;
    sap_int *rp = malloc(sizeof(sap_int) * (size_t)(n + 1)), *ci = malloc(sizeof(sap_int) * (size_t)(5 * n));
    double *v = malloc(sizeof(double) * (size_t)(5 * n));
    sap_int k = 0;
    for (sap_int j = 0; j < ny; j++)
        for (sap_int i = 0; i < nx; i++) {
            const sap_int r = i + j * nx;
            rp[r] = k;
            if (j > 0) ci[k] = r - nx, v[k++] = -1.0 - cy;
            if (i > 0) ci[k] = r - 1, v[k++] = -1.0 - cx;
            ci[k] = r, v[k++] = 4.0 + cx + cy;
            if (i + 1 < nx) ci[k] = r + 1, v[k++] = -1.0;
            if (j + 1 < ny) ci[k] = r + nx, v[k++] = -1.0;
        }
    rp[n] = k;
    sap_csr *A = NULL;
    CHECK_OK(ctx, sap_csr_from_arrays(ctx, n, n, rp, ci, v, &A));
    free(rp);
    free(ci);
    free(v);
    return A;
}

/* one solve with a preconditioner given by name and option list; the true residual */
static sap_status solve_pc(sap_context *ctx, const sap_csr *A, const double *b, double *x, sap_krylov_type type,
                           int param, const char *pc, const char *pcopts, sap_precond_side side, double tol,
                           sap_krylov_stats *ks)
{
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    sap_status st = sap_matrix_create(ctx, A, NULL, &M);
    if (st == SAP_OK && pc) {
        st = sap_precond_create(ctx, pc, &P);
        if (st == SAP_OK && pcopts) st = sap_precond_set_options(P, pcopts);
        if (st == SAP_OK) st = sap_precond_setup_symbolic(P, A);
        if (st == SAP_OK) st = sap_precond_setup_numeric(P, A);
        if (st > 0) st = SAP_OK; /* boosted pivots */
    }
    sap_krylov_options o;
    sap_krylov_options_init(&o);
    o.type = type;
    o.param = param;
    o.side = side;
    o.tol = tol;
    o.maxit = 5000;
    if (st == SAP_OK) st = sap_krylov_create(ctx, &o, &K);
    if (st == SAP_OK) st = sap_krylov_solve(K, M, P, b, x, ks);
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    return st;
}

/* Richardson with its BiCGStab(2) fallback (krylov/richardson.c): with SaP-D in float on a
 * diagonally dominant band (N = 10,000, K = 100, d = 1, partitions of 100 rows: a step
 * contracts the residual ~17x) it stays Richardson (whole iterations, one SpMV and one apply
 * a step) and needs fewer SpMVs and applies than BiCGStab(2) to the same tolerance (cpu,
 * measured: 10 steps against 4 BiCGStab(2) iterations, 16 SpMVs); with Jacobi on a Poisson
 * matrix (a step contracts by ~1 - 1e-2) it hands over after its first step and converges as
 * BiCGStab(2) (quarter steps). */
static sap_status solve_pc_float(sap_context *ctx, sap_matrix *M, sap_precond *P, sap_krylov_type type, int param,
                                 const double *b, double *x, sap_krylov_stats *ks)
{
    sap_krylov *K = NULL;
    sap_krylov_options o;
    sap_krylov_options_init(&o);
    o.type = type;
    o.param = param;
    o.tol = 1e-10;
    sap_status st = sap_krylov_create(ctx, &o, &K);
    if (st == SAP_OK) st = sap_krylov_solve(K, M, P, b, x, ks);
    sap_krylov_destroy(K);
    return st;
}

static void test_richardson(sap_context *ctx)
{
    sap_csr *B = NULL, *Q = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, 10000, 100, 1.0, 0, 5, &B));
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, 30, 30, &Q));
    if (!B || !Q) return;
    const sap_int n = B->nrows, nq = Q->nrows;
    double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
    for (sap_int i = 0; i < n; i++) b[i] = 1.0 + sin(0.37 * (double)i);
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    CHECK_OK(ctx, sap_matrix_create(ctx, B, NULL, &M));
    CHECK_OK(ctx, sap_precond_create(ctx, "sap-d", &P));
    CHECK_OK(ctx, sap_precond_set_options(P, "partitions=100"));
    CHECK_OK(ctx, sap_precond_set_precision(P, SAP_FLOAT));
    CHECK(sap_precond_setup_numeric(P, B) >= 0);
    sap_krylov_stats kr, kb;
    memset(&kr, 0, sizeof kr);
    memset(&kb, 0, sizeof kb);
    sap_status sr = solve_pc_float(ctx, M, P, SAP_KRYLOV_RICHARDSON, 0, b, x, &kr);
    CHECK_MSG(sr == SAP_OK && true_residual(B, b, x) <= 1e-10, "richardson sap-d: %s, residual %.3g",
              sap_status_name(sr), true_residual(B, b, x));
    /* from x0 = 0 the first residual is b and the last step's residual is the true one:
     * one SpMV a step, none more; from a nonzero x0 one more (its residual) */
    CHECK_MSG(sr != SAP_OK || (double)kr.spmv_count == kr.iterations, "richardson sap-d from 0: %lld SpMVs, %g steps",
              (long long)kr.spmv_count, kr.iterations);
    sap_krylov_stats k1;
    memset(&k1, 0, sizeof k1);
    for (sap_int i = 0; i < n; i++) x[i] = i == n / 2 ? 1e-3 : 0.0;
    sap_status s1 = solve_pc_float(ctx, M, P, SAP_KRYLOV_RICHARDSON, 0, b, x, &k1);
    CHECK_MSG(s1 == SAP_OK && true_residual(B, b, x) <= 1e-10 && (double)k1.spmv_count == k1.iterations + 1.0,
              "richardson sap-d from x0 != 0: %s, residual %.3g, %lld SpMVs, %g steps", sap_status_name(s1),
              true_residual(B, b, x), (long long)k1.spmv_count, k1.iterations);
    /* host vectors: their copies timed, a part of the whole (b and x0 up, x down) */
    CHECK_MSG(k1.time_transfer > 0 && k1.time_transfer <= k1.time_total && kr.time_transfer > 0 &&
                  kr.time_transfer <= kr.time_total,
              "transfer times %.3g of %.3g s, %.3g of %.3g s", k1.time_transfer, k1.time_total, kr.time_transfer,
              kr.time_total);
    memset(x, 0, sizeof(double) * (size_t)n);
    sap_status sb = solve_pc_float(ctx, M, P, SAP_KRYLOV_BICGSTABL, 2, b, x, &kb);
    CHECK(sb == SAP_OK);
    CHECK_MSG(kr.iterations == floor(kr.iterations) && kr.iterations >= 2, "richardson sap-d: %g iterations (a fallback?)",
              kr.iterations);
    CHECK_MSG(kr.spmv_count < kb.spmv_count && kr.precond_count < kb.precond_count,
              "richardson sap-d: %lld SpMVs %lld applies, bicgstab(2) %lld %lld", (long long)kr.spmv_count,
              (long long)kr.precond_count, (long long)kb.spmv_count, (long long)kb.precond_count);
    printf("richardson, float sap-d on banded N=10000 K=100 d=1 P=100: %g steps, %lld SpMVs %lld applies "
           "(bicgstab(2): %g it, %lld %lld)\n", kr.iterations, (long long)kr.spmv_count, (long long)kr.precond_count,
           kb.iterations, (long long)kb.spmv_count, (long long)kb.precond_count);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    double *bq = malloc(sizeof(double) * (size_t)nq), *xq = calloc((size_t)nq, sizeof(double));
    for (sap_int i = 0; i < nq; i++) bq[i] = 1.0 + (double)(i % 7);
    sr = solve_pc(ctx, Q, bq, xq, SAP_KRYLOV_RICHARDSON, 0, "jacobi", NULL, SAP_PRECOND_RIGHT, 1e-10, &kr);
    CHECK_MSG(sr == SAP_OK && true_residual(Q, bq, xq) <= 1e-10, "richardson jacobi: %s", sap_status_name(sr));
    CHECK_MSG(kr.iterations != floor(kr.iterations) || kr.iterations > 10, "richardson jacobi: %g iterations",
              kr.iterations);
    printf("richardson, jacobi on poisson2d 30x30: %g iterations (BiCGStab(2) after the first step)\n", kr.iterations);
    free(b);
    free(x);
    free(bq);
    free(xq);
    sap_csr_destroy(B);
    sap_csr_destroy(Q);
}

static void test_magma_methods(sap_context *ctx)
{
    static const struct {
        sap_krylov_type type;
        int param;
    } nm[] = {{SAP_KRYLOV_BICG, 0}, {SAP_KRYLOV_CGS, 0}, {SAP_KRYLOV_QMR, 0}, {SAP_KRYLOV_TFQMR, 0},
              {SAP_KRYLOV_IR, 0},   {SAP_KRYLOV_IR, SAP_KRYLOV_BICGSTAB + 1}, {SAP_KRYLOV_IR, SAP_KRYLOV_IDR + 1},
              {SAP_KRYLOV_ASYNC_JACOBI, 0}, {SAP_KRYLOV_ASYNC_JACOBI, 5}, {SAP_KRYLOV_RICHARDSON, 0},
              {SAP_KRYLOV_RICHARDSON, 4}};
    static const struct {
        const char *pc, *opts;
    } pcs[] = {{NULL, NULL}, {"jacobi", NULL}, {"sap-d", "partitions=4"}, {"sap-c", "partitions=4"}};
    struct {
        const char *name;
        sap_csr *A;
    } sy[4];
    memset(sy, 0, sizeof(sy));
    sy[0].name = "poisson2d 14x13";
    sap_gen_poisson2d(ctx, 14, 13, &sy[0].A);
    sy[1].name = "convection-diffusion 20x18";
    sy[1].A = convdiff2d(ctx, 20, 18, 2.0, 0.5);
    sy[2].name = "banded nonsym N=700 K=5 d=1.3";
    sap_gen_banded(ctx, 700, 5, 1.3, 0, 17, &sy[2].A);
    sy[3].name = "fs_760_1";
    sy[3].A = sap_test_load_matrix(ctx, "fs_760_1");
    const double tol = 1e-8;
    for (int q = 0; q < 4; q++) {
        if (!sy[q].A) {
            printf("test_krylov: %s not found, skipped\n", sy[q].name);
            continue;
        }
        const sap_int n = sy[q].A->nrows;
        double *b = malloc(sizeof(double) * (size_t)n), *x = malloc(sizeof(double) * (size_t)n);
        for (sap_int i = 0; i < n; i++) b[i] = 1.0 + sin(0.37 * (double)i);
        for (size_t m = 0; m < sizeof(nm) / sizeof(nm[0]); m++)
            for (size_t p = 0; p < sizeof(pcs) / sizeof(pcs[0]); p++)
                for (int side = 0; side < 2; side++) {
                    /* the side matters to CGS, TFQMR and IR's inner method only */
                    if (side && (nm[m].type == SAP_KRYLOV_BICG || nm[m].type == SAP_KRYLOV_QMR ||
                                 nm[m].type == SAP_KRYLOV_ASYNC_JACOBI || !pcs[p].pc))
                        continue;
                    /* the real matrix: no preconditioner and SaP-D only (time) */
                    if (q == 3 && (p == 1 || p == 3)) continue;
                    memset(x, 0, sizeof(double) * (size_t)n);
                    sap_krylov_stats ks;
                    sap_status st = solve_pc(ctx, sy[q].A, b, x, nm[m].type, nm[m].param, pcs[p].pc, pcs[p].opts,
                                             side ? SAP_PRECOND_LEFT : SAP_PRECOND_RIGHT, tol, &ks);
                    solves_done++;
                    const double tr = true_residual(sy[q].A, b, x);
                    CHECK_MSG(st == SAP_OK && tr <= tol, "%s: %s(%d) pc=%s side=%s: %s (%s), true residual %.3e", sy[q].name,
                              sap_krylov_name(nm[m].type), nm[m].param, pcs[p].pc ? pcs[p].pc : "-",
                              side ? "left" : "right", sap_status_name(st), sap_context_last_error(ctx), tr);
                    CHECK(fabs(ks.true_residual - tr) <= 1e-3 * tol + 1e-14);
                }
        free(b);
        free(x);
    }
    /* async Jacobi on a matrix Jacobi diverges on ([[1, 2], [2, 1]]: spectral radius 2 of
     * the iteration): a breakdown status before the overflow, x finite */
    {
        sap_int rowptr[3] = {0, 2, 4}, colind[4] = {0, 1, 0, 1};
        double val[4] = {1.0, 2.0, 2.0, 1.0}, bb[2] = {1.0, 0.5}, xx[2] = {0.0, 0.0};
        sap_csr *D = NULL;
        CHECK_OK(ctx, sap_csr_from_arrays(ctx, 2, 2, rowptr, colind, val, &D));
        sap_krylov_stats ks;
        CHECK_STATUS(ctx, solve_pc(ctx, D, bb, xx, SAP_KRYLOV_ASYNC_JACOBI, 0, NULL, NULL, SAP_PRECOND_RIGHT, tol, &ks),
                     SAP_WARN_BREAKDOWN);
        CHECK(strstr(sap_context_last_error(ctx), "diverges") != NULL);
        CHECK(isfinite(xx[0]) && isfinite(xx[1]));
        sap_csr_destroy(D);
    }
    /* breakdowns: A = [[0, 1], [1, 0]], b = e1 (rt . A p = 0) -> SAP_WARN_BREAKDOWN, x = x0 */
    {
        sap_int rowptr[3] = {0, 1, 2}, colind[2] = {1, 0};
        double val[2] = {1.0, 1.0}, bb[2] = {1.0, 0.0}, xx[2];
        sap_csr *B = NULL;
        CHECK_OK(ctx, sap_csr_from_arrays(ctx, 2, 2, rowptr, colind, val, &B));
        const sap_krylov_type bd[] = {SAP_KRYLOV_BICG, SAP_KRYLOV_CGS, SAP_KRYLOV_QMR, SAP_KRYLOV_TFQMR};
        for (int k = 0; k < 4; k++) {
            xx[0] = xx[1] = 0.0;
            sap_krylov_stats ks;
            CHECK_STATUS(ctx, solve_pc(ctx, B, bb, xx, bd[k], 0, NULL, NULL, SAP_PRECOND_RIGHT, tol, &ks),
                         SAP_WARN_BREAKDOWN);
            CHECK(strstr(sap_context_last_error(ctx), "breakdown") != NULL);
            CHECK(strstr(sap_context_last_error(ctx), sap_krylov_name(bd[k])) != NULL);
            CHECK(xx[0] == 0.0 && xx[1] == 0.0);
        }
        /* IR with an inner BiCGStab that breaks down: a breakdown status, finite x */
        xx[0] = xx[1] = 0.0;
        sap_krylov_stats ks;
        sap_status st = solve_pc(ctx, B, bb, xx, SAP_KRYLOV_IR, SAP_KRYLOV_BICGSTAB + 1, NULL, NULL, SAP_PRECOND_RIGHT,
                                 tol, &ks);
        CHECK_MSG(st == SAP_WARN_BREAKDOWN, "ir(bicgstab) on a breakdown system: %s", sap_status_name(st));
        CHECK(isfinite(xx[0]) && isfinite(xx[1]));
        /* async Jacobi: no diagonal, nothing moves: the iteration limit, x = x0 */
        xx[0] = xx[1] = 0.0;
        st = solve_pc(ctx, B, bb, xx, SAP_KRYLOV_ASYNC_JACOBI, 0, NULL, NULL, SAP_PRECOND_RIGHT, tol, &ks);
        CHECK_MSG(st == SAP_WARN_NOT_CONVERGED, "async-jacobi without a diagonal: %s", sap_status_name(st));
        CHECK(xx[0] == 0.0 && xx[1] == 0.0);
        sap_csr_destroy(B);
    }
    /* IR: parsing of the inner method, and refinement on a float matrix */
    {
        sap_krylov_type t;
        int p = 0;
        CHECK_OK(ctx, sap_krylov_parse("ir:bicgstab", &t, &p));
        CHECK(t == SAP_KRYLOV_IR && p == SAP_KRYLOV_BICGSTAB + 1);
        CHECK_OK(ctx, sap_krylov_parse("IR:tfqmr", &t, &p));
        CHECK(t == SAP_KRYLOV_IR && p == SAP_KRYLOV_TFQMR + 1);
        CHECK_OK(ctx, sap_krylov_parse("async-jacobi:7", &t, &p));
        CHECK(t == SAP_KRYLOV_ASYNC_JACOBI && p == 7);
        const char *bad[] = {"ir:ir", "ir:nope", "ir:", "ir:4", "async-jacobi:65", "bicg:2", "qmr:1", "tfqmr:x"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            CHECK_MSG(sap_krylov_parse(bad[i], &t, &p) == SAP_ERR_INVALID, "'%s' accepted", bad[i]);
        sap_krylov_options o;
        sap_krylov_options_init(&o);
        o.type = SAP_KRYLOV_IR;
        o.param = SAP_KRYLOV_IR + 1; /* ir inside ir */
        sap_krylov *K = NULL;
        CHECK_STATUS(ctx, sap_krylov_create(ctx, &o, &K), SAP_ERR_INVALID);
        CHECK(K == NULL);
        /* the help names the inner method */
        for (int i = 0; i < sap_krylov_method_count(); i++)
            if (!strcmp(sap_krylov_method_name(i), "ir"))
                CHECK(strstr(sap_krylov_method_help(i), "default gmres") != NULL);
    }
    /* IR over a tolerance float cannot reach in one inner solve: several refinement steps,
     * history monotone in iterations */
    if (sy[1].A) {
        const sap_int n = sy[1].A->nrows;
        double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
        for (sap_int i = 0; i < n; i++) b[i] = 1.0;
        sap_krylov_stats ks;
        CHECK_OK(ctx, solve_pc(ctx, sy[1].A, b, x, SAP_KRYLOV_IR, 0, "jacobi", NULL, SAP_PRECOND_RIGHT, 1e-13, &ks));
        CHECK(true_residual(sy[1].A, b, x) <= 1e-13);
        free(b);
        free(x);
    }
    /* the derived matrices (A^T of BiCG/QMR, float A of IR, CSR A of async-jacobi from an
     * ELL matrix) follow sap_matrix_update_values: solves after an update solve the new A */
    if (sy[2].A) {
        const sap_int n = sy[2].A->nrows;
        sap_csr *A2 = NULL;
        CHECK_OK(ctx, sap_csr_copy(sy[2].A, &A2));
        for (sap_int p = 0; p < A2->nnz; p++) /* a different nonsymmetric matrix, same pattern */
            A2->val[p] = A2->colind[p] > (sap_int)(p % n) ? 1.7 * A2->val[p] : A2->val[p];
        for (sap_int i = 0; i < n; i++) /* keep it diagonally dominant */
            for (sap_int p = A2->rowptr[i]; p < A2->rowptr[i + 1]; p++)
                if (A2->colind[p] == i) A2->val[p] *= 2.5;
        double *b = malloc(sizeof(double) * (size_t)n), *x = calloc((size_t)n, sizeof(double));
        for (sap_int i = 0; i < n; i++) b[i] = cos(0.3 * (double)i);
        const sap_krylov_type ts[] = {SAP_KRYLOV_BICG, SAP_KRYLOV_QMR, SAP_KRYLOV_IR, SAP_KRYLOV_ASYNC_JACOBI};
        for (int k = 0; k < 4; k++) {
            sap_matrix_options mo;
            sap_matrix_options_init(&mo);
            mo.format = SAP_FORMAT_ELL;
            sap_matrix *M = NULL;
            sap_krylov *K = NULL;
            sap_krylov_options o;
            sap_krylov_options_init(&o);
            o.type = ts[k];
            o.tol = tol;
            o.maxit = 3000;
            CHECK_OK(ctx, sap_matrix_create(ctx, sy[2].A, &mo, &M));
            CHECK_OK(ctx, sap_krylov_create(ctx, &o, &K));
            sap_krylov_stats ks;
            memset(x, 0, sizeof(double) * (size_t)n);
            CHECK_OK(ctx, sap_krylov_solve(K, M, NULL, b, x, &ks));
            CHECK(true_residual(sy[2].A, b, x) <= tol);
            CHECK_OK(ctx, sap_matrix_update_values(M, A2->val));
            memset(x, 0, sizeof(double) * (size_t)n);
            CHECK_OK(ctx, sap_krylov_solve(K, M, NULL, b, x, &ks));
            const double tr = true_residual(A2, b, x);
            CHECK_MSG(tr <= tol, "%s after update_values: true residual %.3e", sap_krylov_name(ts[k]), tr);
            sap_krylov_destroy(K);
            sap_matrix_destroy(M);
        }
        free(b);
        free(x);
        sap_csr_destroy(A2);
    }
    for (int q = 0; q < 4; q++) sap_csr_destroy(sy[q].A);
}

/* ---- k right-hand sides at once (sap_krylov_solve_many) ------------------------------------
 * The lockstep forms (CG, BiCGStab, BiCGStab(l), Richardson with its fallback, GMRES(m) on
 * either side, FGMRES, CGS, TFQMR and IDR(s)) against k single solves of the same columns: every column converges to the
 * tolerance with about the iterations of its single solve and the same solution; a zero
 * column gives x = 0, a NaN column its error while the others solve; a monitor's stop ends
 * every column; more than 32 columns (two groups). */
static int stop_at_two(void *state, double it, double rel)
{
    (void)rel;
    (*(int *)state)++;
    return it >= 2.0;
}

typedef struct many_case {
    const char *what;
    sap_csr *A;
    sap_krylov_type type;
    int param;
    sap_precond_side side;
    const char *pc, *pcopts;
    sap_precision pc_prec;
    sap_spmv_format fmt;
} many_case;

static void many_one(sap_context *ctx, const many_case *mc, sap_int k, int zero_col, int nan_col, int monitored)
{
    const sap_int n = mc->A->nrows;
    double *B = malloc(sizeof(double) * (size_t)(n * k)), *X = calloc((size_t)(n * k), sizeof(double));
    double *x1 = malloc(sizeof(double) * (size_t)n);
    sap_krylov_stats *ks = calloc((size_t)k, sizeof(sap_krylov_stats)), k1;
    for (sap_int c = 0; c < k; c++)
        for (sap_int i = 0; i < n; i++) B[i + c * n] = (c == zero_col) ? 0.0 : sin(0.1 * (double)(i + 1) * (double)(c + 1)) + 0.2 * (double)c;
    if (nan_col >= 0) B[n / 2 + nan_col * n] = NAN;
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    sap_matrix_options mo;
    sap_matrix_options_init(&mo);
    mo.format = mc->fmt;
    CHECK_OK(ctx, sap_matrix_create(ctx, mc->A, &mo, &M));
    if (mc->pc) {
        CHECK_OK(ctx, sap_precond_create(ctx, mc->pc, &P));
        if (mc->pcopts) CHECK_OK(ctx, sap_precond_set_options(P, mc->pcopts));
        CHECK_OK(ctx, sap_precond_set_precision(P, mc->pc_prec));
        CHECK_OK(ctx, sap_precond_setup_symbolic(P, mc->A));
        CHECK(sap_precond_setup_numeric(P, mc->A) >= 0);
    }
    sap_krylov_options o;
    sap_krylov_options_init(&o);
    o.type = mc->type;
    o.param = mc->param;
    o.side = mc->side;
    o.tol = 1e-10;
    o.maxit = 3000;
    int calls = 0;
    if (monitored) {
        o.monitor = stop_at_two;
        o.monitor_state = &calls;
    }
    CHECK_OK(ctx, sap_krylov_create(ctx, &o, &K));
    if (!M || !K || (mc->pc && !P)) goto out;
    sap_status st = sap_krylov_solve_many(K, M, P, k, B, n, X, n, ks);
    if (monitored) {
        CHECK_MSG(st == SAP_WARN_INTERRUPTED, "%s k=%lld monitored: %s", mc->what, (long long)k, sap_status_name(st));
        for (sap_int c = 0; c < k; c++)
            CHECK_MSG(ks[c].status == SAP_WARN_INTERRUPTED && ks[c].iterations <= 2.0, "%s: column %lld: %s after %g it",
                      mc->what, (long long)c, sap_status_name(ks[c].status), ks[c].iterations);
        CHECK_MSG(calls >= 1 && calls <= 16, "%s: %d monitor calls", mc->what, calls);
        goto out;
    }
    CHECK_MSG(st == (nan_col >= 0 ? SAP_ERR_NONFINITE : SAP_OK), "%s k=%lld: %s (%s)", mc->what, (long long)k,
              sap_status_name(st), sap_context_last_error(ctx));
    double worst_it = 0;
    for (sap_int c = 0; c < k; c++) {
        const double *b = B + c * n, *x = X + c * n;
        if (c == nan_col) {
            CHECK_MSG(ks[c].status == SAP_ERR_NONFINITE, "%s: NaN column: %s", mc->what, sap_status_name(ks[c].status));
            continue;
        }
        CHECK_MSG(ks[c].status == SAP_OK, "%s: column %lld: %s", mc->what, (long long)c, sap_status_name(ks[c].status));
        if (c == zero_col) {
            int zero = 1;
            for (sap_int i = 0; i < n; i++) zero &= x[i] == 0.0;
            CHECK_MSG(zero, "%s: the zero column's x is not 0", mc->what);
            continue;
        }
        const double tr = true_residual(mc->A, b, x);
        CHECK_MSG(tr <= 1e-10 * 1.0000001, "%s: column %lld: true residual %.3g", mc->what, (long long)c, tr);
        memset(x1, 0, sizeof(double) * (size_t)n);
        sap_status s1 = sap_krylov_solve(K, M, P, b, x1, &k1);
        CHECK(s1 == SAP_OK);
        CHECK_MSG(fabs(ks[c].iterations - k1.iterations) <= 1.0 + 0.1 * k1.iterations,
                  "%s: column %lld: %g iterations in the batch, %g alone", mc->what, (long long)c, ks[c].iterations,
                  k1.iterations);
        CHECK_MSG(rel_err(x, x1, n) <= 1e-7, "%s: column %lld differs from its single solve by %.3g", mc->what,
                  (long long)c, rel_err(x, x1, n));
        /* the lockstep form ran: its operator counts are the batch's (k a block apply) */
        if (k > 1 && !(k % 32 == 1 && c == k - 1)) /* (a group of one: alone) */
            CHECK_MSG(ks[c].spmv_count >= (sap_int)k * (sap_int)floor(ks[c].iterations), "%s: column %lld: %lld SpMVs for "
                      "%g it: not the batch's", mc->what, (long long)c, (long long)ks[c].spmv_count, ks[c].iterations);
        worst_it = fmax(worst_it, ks[c].iterations);
    }
    printf("many: %-58s k=%-3lld %s, up to %g it\n", mc->what, (long long)k, sap_status_name(st), worst_it);
out:
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    free(B);
    free(X);
    free(x1);
    free(ks);
}

static void test_many(sap_context *ctx)
{
    const int small = sap_test_smoke() || sap_test_tiny();
    sap_csr *Bd = NULL, *Bc = NULL, *Q = NULL, *Bs = NULL;
    CHECK_OK(ctx, sap_gen_banded(ctx, small ? 600 : 3000, 20, 1.0, 0, 3, &Bd));
    CHECK_OK(ctx, sap_gen_banded(ctx, small ? 600 : 3000, 20, 0.5, 0, 4, &Bc));
    CHECK_OK(ctx, sap_gen_poisson2d(ctx, small ? 12 : 30, small ? 12 : 30, &Q));
    CHECK_OK(ctx, sap_gen_banded(ctx, small ? 400 : 2000, 8, 2.0, 1, 5, &Bs));
    if (!Bd || !Bc || !Q || !Bs) goto out;
    const many_case cases[] = {
        {"banded d=1 richardson sap-d(float)", Bd, SAP_KRYLOV_RICHARDSON, 2, SAP_PRECOND_RIGHT, "sap-d", "partitions=6",
         SAP_FLOAT, SAP_FORMAT_AUTO},
        {"banded d=0.5 bicgstab(2) right sap-c(float)", Bc, SAP_KRYLOV_BICGSTABL, 2, SAP_PRECOND_RIGHT, "sap-c",
         "partitions=4", SAP_FLOAT, SAP_FORMAT_AUTO},
        {"banded d=0.5 richardson sap-c(double) csr", Bc, SAP_KRYLOV_RICHARDSON, 2, SAP_PRECOND_RIGHT, "sap-c",
         "partitions=4", SAP_DOUBLE, SAP_FORMAT_CSR},
        {"banded d=0.5 bicgstab(2) left jacobi band", Bc, SAP_KRYLOV_BICGSTABL, 2, SAP_PRECOND_LEFT, "jacobi", NULL,
         SAP_DOUBLE, SAP_FORMAT_BAND},
        {"banded d=0.5 bicgstab(3) right none ell", Bc, SAP_KRYLOV_BICGSTABL, 3, SAP_PRECOND_RIGHT, NULL, NULL,
         SAP_DOUBLE, SAP_FORMAT_ELL},
        {"poisson2d richardson jacobi (fallback)", Q, SAP_KRYLOV_RICHARDSON, 2, SAP_PRECOND_RIGHT, "jacobi", NULL,
         SAP_DOUBLE, SAP_FORMAT_AUTO},
        {"poisson2d cg jacobi", Q, SAP_KRYLOV_CG, 0, SAP_PRECOND_RIGHT, "jacobi", NULL, SAP_DOUBLE, SAP_FORMAT_AUTO},
        {"banded spd cg sap-d(float)", Bs, SAP_KRYLOV_CG, 0, SAP_PRECOND_RIGHT, "sap-d", "partitions=5", SAP_FLOAT,
         SAP_FORMAT_AUTO},
        {"banded d=0.5 gmres(20) right jacobi", Bc, SAP_KRYLOV_GMRES, 20, SAP_PRECOND_RIGHT, "jacobi", NULL,
         SAP_DOUBLE, SAP_FORMAT_AUTO},
        {"banded d=0.5 gmres(8) right sap-c(float)", Bc, SAP_KRYLOV_GMRES, 8, SAP_PRECOND_RIGHT, "sap-c",
         "partitions=4", SAP_FLOAT, SAP_FORMAT_AUTO},
        {"banded d=0.5 gmres(5) left sap-d(double) csr", Bc, SAP_KRYLOV_GMRES, 5, SAP_PRECOND_LEFT, "sap-d",
         "partitions=6", SAP_DOUBLE, SAP_FORMAT_CSR},
        {"poisson2d gmres(10) none (restarts)", Q, SAP_KRYLOV_GMRES, 10, SAP_PRECOND_RIGHT, NULL, NULL, SAP_DOUBLE,
         SAP_FORMAT_AUTO},
        {"banded d=0.5 fgmres(6) sap-d(float)", Bc, SAP_KRYLOV_FGMRES, 6, SAP_PRECOND_RIGHT, "sap-d", "partitions=6",
         SAP_FLOAT, SAP_FORMAT_AUTO},
        {"banded d=0.5 bicgstab right sap-c(float)", Bc, SAP_KRYLOV_BICGSTAB, 0, SAP_PRECOND_RIGHT, "sap-c",
         "partitions=4", SAP_FLOAT, SAP_FORMAT_AUTO},
        {"poisson2d bicgstab left jacobi", Q, SAP_KRYLOV_BICGSTAB, 0, SAP_PRECOND_LEFT, "jacobi", NULL, SAP_DOUBLE,
         SAP_FORMAT_AUTO},
        {"banded d=0.5 bicgstab none csr", Bc, SAP_KRYLOV_BICGSTAB, 0, SAP_PRECOND_RIGHT, NULL, NULL, SAP_DOUBLE,
         SAP_FORMAT_CSR},
        {"banded d=0.5 cgs right sap-d(float)", Bc, SAP_KRYLOV_CGS, 0, SAP_PRECOND_RIGHT, "sap-d", "partitions=6",
         SAP_FLOAT, SAP_FORMAT_AUTO},
        {"poisson2d cgs left jacobi", Q, SAP_KRYLOV_CGS, 0, SAP_PRECOND_LEFT, "jacobi", NULL, SAP_DOUBLE,
         SAP_FORMAT_AUTO},
        {"banded d=0.5 tfqmr right sap-c(float)", Bc, SAP_KRYLOV_TFQMR, 0, SAP_PRECOND_RIGHT, "sap-c", "partitions=4",
         SAP_FLOAT, SAP_FORMAT_AUTO},
        {"poisson2d tfqmr left jacobi", Q, SAP_KRYLOV_TFQMR, 0, SAP_PRECOND_LEFT, "jacobi", NULL, SAP_DOUBLE,
         SAP_FORMAT_AUTO},
        {"banded d=0.5 idr(4) right sap-d(float)", Bc, SAP_KRYLOV_IDR, 4, SAP_PRECOND_RIGHT, "sap-d", "partitions=6",
         SAP_FLOAT, SAP_FORMAT_AUTO},
        {"poisson2d idr(2) left jacobi", Q, SAP_KRYLOV_IDR, 2, SAP_PRECOND_LEFT, "jacobi", NULL, SAP_DOUBLE,
         SAP_FORMAT_AUTO},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        many_one(ctx, &cases[i], 1, -1, -1, 0);
        many_one(ctx, &cases[i], 5, 3, -1, 0);
    }
    many_one(ctx, &cases[0], small ? 3 : 33, -1, -1, 0); /* two groups */
    many_one(ctx, &cases[1], 4, -1, 2, 0);               /* a NaN column */
    many_one(ctx, &cases[0], 4, -1, -1, 1);              /* the monitor stops them all */
    many_one(ctx, &cases[5], 4, -1, -1, 1);
    many_one(ctx, &cases[6], 4, -1, -1, 1);
    many_one(ctx, &cases[8], 4, -1, -1, 1); /* GMRES: the monitor stops the cycle */
    many_one(ctx, &cases[11], 4, -1, 1, 0); /* GMRES: a NaN column */
    many_one(ctx, &cases[14], 4, -1, -1, 1); /* BiCGStab: the monitor (at a half or a whole step) */
    many_one(ctx, &cases[14], 4, -1, 0, 0);  /* BiCGStab: a NaN column */
    many_one(ctx, &cases[17], 4, -1, -1, 1); /* CGS, TFQMR: the monitor, a NaN column */
    many_one(ctx, &cases[19], 4, -1, -1, 1);
    many_one(ctx, &cases[19], 4, 1, 2, 0);
    many_one(ctx, &cases[21], 4, -1, -1, 1); /* IDR(s): the monitor, a NaN column */
    many_one(ctx, &cases[21], 4, 1, 2, 0);
    /* argument errors */
    {
        sap_matrix *M = NULL;
        sap_krylov *K = NULL;
        sap_krylov_options o;
        sap_krylov_options_init(&o);
        CHECK_OK(ctx, sap_matrix_create(ctx, Q, NULL, &M));
        CHECK_OK(ctx, sap_krylov_create(ctx, &o, &K));
        double b[4] = {0}, x[4] = {0};
        CHECK_STATUS(ctx, sap_krylov_solve_many(K, M, NULL, 2, b, 1, x, Q->nrows, NULL), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, sap_krylov_solve_many(K, M, NULL, -1, b, Q->nrows, x, Q->nrows, NULL), SAP_ERR_INVALID);
        CHECK_STATUS(ctx, sap_krylov_solve_many(K, M, NULL, 2, NULL, Q->nrows, x, Q->nrows, NULL), SAP_ERR_INVALID);
        CHECK_OK(ctx, sap_krylov_solve_many(K, M, NULL, 0, NULL, Q->nrows, NULL, Q->nrows, NULL));
        sap_krylov_destroy(K);
        sap_matrix_destroy(M);
    }
out:
    sap_csr_destroy(Bd);
    sap_csr_destroy(Bc);
    sap_csr_destroy(Q);
    sap_csr_destroy(Bs);
}

static int cpu_part(void)
{
    sap_context *ctx = sap_test_context(SAP_BACKEND_CPU);
    if (!ctx) return 1;
    test_parse(ctx);
    test_trivial(ctx);
    test_statuses(ctx);
    test_monitor(ctx);
    test_precision(ctx);
    test_reuse(ctx);
    test_systems(ctx);
    test_magma_methods(ctx);
    test_richardson(ctx);
    test_many(ctx);
    sap_context_destroy(ctx);
    test_determinism();
    test_oom();
    printf("%s: %d solves on the test systems (%d tolerated warnings)\n", sap_test_name(), solves_done, lenient_warnings);
    return 0;
}

/* ==== --backend cuda: a cuda context against a cpu reference context ================== */

typedef struct system {
    const char *name;
    sap_csr *A;
    double *b, *xstar;
    int spd;
} system_t;

static sap_context *G, *C;

static double nrm(const double *v, sap_int n)
{
    double s = 0;
    for (sap_int i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

static void make_rhs(system_t *S)
{
    const sap_int n = S->A->nrows;
    S->xstar = malloc(sizeof(double) * (size_t)(n + 1));
    S->b = malloc(sizeof(double) * (size_t)(n + 1));
    CHECK_OK(C, sap_gen_xstar(C, n, SAP_XSTAR_RANDOM, 7, S->xstar));
    CHECK_OK(C, sap_csr_spmv(S->A, 1.0, S->xstar, 0.0, S->b));
}

/* One solve; returns the status, fills x and stats. */
static sap_status solve(sap_context *ctx, const system_t *S, sap_krylov_type type, int param, sap_precond_side side,
                        const char *pc, sap_precision pc_prec, sap_spmv_format fmt, double *x, sap_krylov_stats *stats)
{
    const sap_int n = S->A->nrows;
    sap_matrix *M = NULL;
    sap_precond *P = NULL;
    sap_krylov *K = NULL;
    sap_status st = SAP_ERR_INVALID;
    sap_matrix_options mo;
    sap_matrix_options_init(&mo);
    mo.format = fmt;
    memset(x, 0, sizeof(double) * (size_t)n);
    memset(stats, 0, sizeof(*stats));
    CHECK_OK(ctx, sap_matrix_create(ctx, S->A, &mo, &M));
    if (!M) goto out;
    if (pc) {
        CHECK_OK(ctx, sap_precond_create(ctx, pc, &P));
        if (!P) goto out;
        CHECK_OK(ctx, sap_precond_set_precision(P, pc_prec));
        CHECK_OK(ctx, sap_precond_setup_symbolic(P, S->A));
        CHECK_OK(ctx, sap_precond_setup_numeric(P, S->A));
    }
    sap_krylov_options opt;
    sap_krylov_options_init(&opt);
    opt.type = type;
    opt.param = param;
    opt.side = side;
    opt.tol = 1e-10;
    opt.maxit = 4000;
    CHECK_OK(ctx, sap_krylov_create(ctx, &opt, &K));
    if (!K) goto out;
    st = sap_krylov_solve(K, M, P, S->b, x, stats);
out:
    sap_krylov_destroy(K);
    sap_precond_destroy(P);
    sap_matrix_destroy(M);
    return st;
}

static void run_case(const system_t *S, sap_krylov_type type, int param, sap_precond_side side, const char *pc,
                     sap_precision pc_prec, sap_spmv_format fmt)
{
    const sap_int n = S->A->nrows;
    double *xg = malloc(sizeof(double) * (size_t)(n + 1)), *xg2 = malloc(sizeof(double) * (size_t)(n + 1));
    double *xc = malloc(sizeof(double) * (size_t)(n + 1)), *d = malloc(sizeof(double) * (size_t)(n + 1));
    sap_krylov_stats sg, sg2, sc;
    char what[256];
    snprintf(what, sizeof(what), "%s %s(%d) %s pc=%s%s fmt=%s", S->name, sap_krylov_name(type), param,
             side == SAP_PRECOND_LEFT ? "left" : "right", pc ? pc : "none",
             pc && pc_prec == SAP_FLOAT ? "(float)" : "", sap_spmv_format_name(fmt));
    sap_context_reset_transfer_stats(G);
    sap_status stg = solve(G, S, type, param, side, pc, pc_prec, fmt, xg, &sg);
    sap_context_stats cs;
    sap_context_get_stats(G, &cs);
    sap_status stc = solve(C, S, type, param, side, pc, pc_prec, SAP_FORMAT_AUTO, xc, &sc);
    sap_status stg2 = solve(G, S, type, param, side, pc, pc_prec, fmt, xg2, &sg2);

    CHECK_MSG(stg == SAP_OK, "%s: gpu status %s (%s), true residual %.3g after %g iterations", what,
              sap_status_name(stg), sap_context_last_error(G), sg.true_residual, sg.iterations);
    CHECK_MSG(stc == SAP_OK, "%s: cpu status %s (%s)", what, sap_status_name(stc), sap_context_last_error(C));
    CHECK_MSG(sg.true_residual <= 1e-10 * 1.0000001, "%s: gpu true residual %.3g", what, sg.true_residual);
    for (sap_int i = 0; i < n; i++) d[i] = xg[i] - xc[i];
    double rel = nrm(d, n) / fmax(nrm(xc, n), 1e-300);
    CHECK_MSG(rel <= 1e-6, "%s: gpu and cpu solutions differ by %.3g (relative)", what, rel);
    for (sap_int i = 0; i < n; i++) d[i] = xg[i] - S->xstar[i];
    double err = nrm(d, n) / fmax(nrm(S->xstar, n), 1e-300);
    CHECK_MSG(err <= 1e-5, "%s: error against x* %.3g", what, err);
    CHECK_MSG(fabs(sg.iterations - sc.iterations) <= 5 + 0.25 * sc.iterations,
              "%s: %g iterations on the gpu, %g on the cpu", what, sg.iterations, sc.iterations);
    /* deterministic: the same solve again is bit-identical (block-asynchronous Jacobi is
     * nondeterministic on the gpu by design: the second solve must converge as well) */
    if (type == SAP_KRYLOV_ASYNC_JACOBI)
        CHECK_MSG(stg2 == SAP_OK && sg2.true_residual <= 1e-10 * 1.0000001, "%s: a second gpu solve: %s, %.3g", what,
                  sap_status_name(stg2), sg2.true_residual);
    else
        CHECK_MSG(stg2 == stg && sg2.iterations == sg.iterations && memcmp(xg, xg2, sizeof(double) * (size_t)n) == 0,
                  "%s: a second gpu solve differs (%g vs %g iterations)", what, sg.iterations, sg2.iterations);
    CHECK_MSG(sap_context_backend(G) != SAP_BACKEND_CUDA ||
                  (cs.h2d_bytes >= (int64_t)(8 * n) && cs.d2h_bytes >= (int64_t)(8 * n) && cs.h2d_copies > 0 &&
                   cs.d2h_copies > 0),
              "%s: transfers not counted (h2d %lld, d2h %lld)", what, (long long)cs.h2d_bytes, (long long)cs.d2h_bytes);
    printf("%-70s gpu %6g it (%.2e)  cpu %6g it (%.2e)  diff %.1e\n", what, sg.iterations, sg.true_residual,
           sc.iterations, sc.true_residual, rel);
    free(xg);
    free(xg2);
    free(xc);
    free(d);
}

static int gpu_part(void)
{
    int rc = sap_test_gpu_context(sap_test_name(), 1, &G, NULL);
    if (rc) return rc;
    C = sap_test_context(SAP_BACKEND_CPU);
    printf("device: %s\n", sap_context_device_name(G));

    system_t systems[4];
    memset(systems, 0, sizeof(systems));
    /* racecheck (sap_test_tiny): the same kernels on smaller systems, fewer iterations */
    const int tiny = sap_test_tiny();
    systems[0].name = tiny ? "poisson2d 12x12" : "poisson2d 40x40";
    systems[0].spd = 1;
    CHECK_OK(C, sap_gen_poisson2d(C, tiny ? 12 : 40, tiny ? 12 : 40, &systems[0].A));
    systems[1].name = tiny ? "banded nonsym n=300 k=6" : "banded nonsym n=3001 k=6";
    CHECK_OK(C, sap_gen_banded(C, tiny ? 300 : 3001, 6, 1.2, 0, 11, &systems[1].A));
    systems[2].name = "banded spd n=31 k=3";
    systems[2].spd = 1;
    CHECK_OK(C, sap_gen_banded(C, 31, 3, 2.0, 1, 5, &systems[2].A));
    systems[3].name = "one row";
    systems[3].spd = 1;
    CHECK_OK(C, sap_gen_poisson2d(C, 1, 1, &systems[3].A));
    for (int s = 0; s < 4; s++)
        if (systems[s].A) make_rhs(&systems[s]);

    static const struct {
        sap_krylov_type type;
        int param;
    } solvers[] = {{SAP_KRYLOV_CG, 0},    {SAP_KRYLOV_BICGSTAB, 0}, {SAP_KRYLOV_BICGSTABL, 2},
                   {SAP_KRYLOV_GMRES, 20}, {SAP_KRYLOV_FGMRES, 30},  {SAP_KRYLOV_IDR, 4},
                   {SAP_KRYLOV_BICG, 0},   {SAP_KRYLOV_CGS, 0},      {SAP_KRYLOV_QMR, 0},
                   {SAP_KRYLOV_TFQMR, 0},  {SAP_KRYLOV_IR, 0},       {SAP_KRYLOV_IR, SAP_KRYLOV_BICGSTAB + 1}};
    const int smoke = sap_test_smoke(); /* under the slow sanitizer tools: the small systems */
    for (int s = 0; s < 4; s++) {
        if (!systems[s].A || (smoke && s == 1)) continue;
        for (size_t k = 0; k < sizeof(solvers) / sizeof(solvers[0]); k++) {
            if (solvers[k].type == SAP_KRYLOV_CG && !systems[s].spd) continue;
            run_case(&systems[s], solvers[k].type, solvers[k].param, SAP_PRECOND_RIGHT, NULL, SAP_DOUBLE, SAP_FORMAT_AUTO);
            run_case(&systems[s], solvers[k].type, solvers[k].param, SAP_PRECOND_RIGHT, "jacobi", SAP_DOUBLE,
                     SAP_FORMAT_AUTO);
            if (solvers[k].type != SAP_KRYLOV_CG && solvers[k].type != SAP_KRYLOV_FGMRES &&
                solvers[k].type != SAP_KRYLOV_BICG && solvers[k].type != SAP_KRYLOV_QMR)
                run_case(&systems[s], solvers[k].type, solvers[k].param, SAP_PRECOND_LEFT, "jacobi", SAP_DOUBLE,
                         SAP_FORMAT_AUTO);
            run_case(&systems[s], solvers[k].type, solvers[k].param, SAP_PRECOND_RIGHT, "jacobi", SAP_FLOAT,
                     SAP_FORMAT_AUTO);
        }
    }
    /* block-asynchronous Jacobi (diagonally dominant systems: the banded ones), with and
     * without a preconditioner, double and float matrices' CSR copy */
    for (int s = 1; s < 4; s++) {
        if (!systems[s].A || (smoke && s == 1)) continue;
        run_case(&systems[s], SAP_KRYLOV_ASYNC_JACOBI, 0, SAP_PRECOND_RIGHT, NULL, SAP_DOUBLE, SAP_FORMAT_AUTO);
        run_case(&systems[s], SAP_KRYLOV_ASYNC_JACOBI, 4, SAP_PRECOND_RIGHT, "jacobi", SAP_DOUBLE, SAP_FORMAT_AUTO);
        run_case(&systems[s], SAP_KRYLOV_ASYNC_JACOBI, 1, SAP_PRECOND_RIGHT, NULL, SAP_DOUBLE, SAP_FORMAT_ELL);
    }
    /* the transposed SpMV of BiCG/QMR in every format */
    for (size_t f = 0; f < 4 && systems[1].A && !smoke; f++) {
        static const sap_spmv_format tf[] = {SAP_FORMAT_CSR, SAP_FORMAT_ELL, SAP_FORMAT_SELLP, SAP_FORMAT_HEC};
        run_case(&systems[1], SAP_KRYLOV_QMR, 0, SAP_PRECOND_RIGHT, "jacobi", SAP_DOUBLE, tf[f]);
    }
    /* every SpMV format inside a solve */
    static const sap_spmv_format fmts[] = {SAP_FORMAT_CSR, SAP_FORMAT_ELL, SAP_FORMAT_SELLP, SAP_FORMAT_HEC,
                                           SAP_FORMAT_BAND};
    for (size_t f = 0; f < 5; f++) {
        if (systems[0].A) run_case(&systems[0], SAP_KRYLOV_CG, 0, SAP_PRECOND_RIGHT, "jacobi", SAP_DOUBLE, fmts[f]);
        if (systems[1].A) run_case(&systems[1], SAP_KRYLOV_BICGSTABL, 2, SAP_PRECOND_RIGHT, NULL, SAP_DOUBLE, fmts[f]);
    }

    test_many(G);

    for (int s = 0; s < 4; s++) {
        sap_csr_destroy(systems[s].A);
        free(systems[s].b);
        free(systems[s].xstar);
    }
    sap_context_destroy(G);
    sap_context_destroy(C);
    return 0;
}

int main(int argc, char **argv) { return sap_test_main(argc, argv, "test_krylov", cpu_part, gpu_part); }
